package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Paper is the generated trace that follows the paper's own description of its
// long-running training experiment (Salus, MLSys 2020, section 6.1): "a job trace of
// 100 workloads, generated using the jobs described in Table 2 ... multiple batch
// sizes and durations of each training job ... The overall distribution followed one
// found in a production cluster (Gu et al., 2019)", which is Tiresias's study of
// Microsoft's Philly cluster. Every parameter, and where it comes from:
//
//   - Jobs: 100. Models and batch sizes: drawn uniformly from the catalog's measured
//     training profiles (the paper's Table 2 workloads, as Salus timed them).
//   - Length shape: each job's training time (its iterations' time alone, start-up
//     excluded) is lognormal with a log-standard deviation of PaperLogSD = 1.97,
//     that of the 1-GPU jobs of the Philly trace (reference/philly-job-durations.csv,
//     76,627 jobs). A lognormal rather than the Philly quantiles themselves: its
//     mean is 7.0x its median where Philly's is 7.4x, and it has no top percentile
//     that spans 135,404 s to 3,256,045 s, from which 63% of 100-job draws would
//     take one job holding most of the trace's work (Table 1's SRTF p95 of 217 min,
//     five jobs finishing after 217 min, rules such a trace out).
//   - Length scale: the lengths are scaled together so that the trace's mean time
//     alone (start-up plus iterations) is PaperMeanAloneS = 3.0 min, which Table 1's
//     FIFO row implies by arithmetic: one job at a time, so average JCT minus
//     average queuing, 170.6 - 167.6 min, is the mean time a job takes alone. Each
//     seed's trace is scaled to that mean exactly: the paper's trace had it.
//   - Arrivals: the first job at 0 and the other 99 at independent uniform times
//     over a window of PaperWindowS = 49 min, sorted (a Poisson process conditioned
//     on its count in the window, the paper saying nothing of the process). The
//     window is what Table 1 and Fig. 7 imply: FIFO's longest JCT is about 254 min
//     and its makespan 303.4 min, so the last job arrived near 303.4 - 254 = 49 min.
//     --load L shrinks the window to 49/L min; --jobs N stretches it to N/100 of it.
//
// Those two scale facts are the only inputs taken from Table 1; nothing is fitted
// to its SRTF, PACK or FAIR rows, which are predictions to test.
const Paper = "paper"

// The paper trace's parameters (see Paper).
const (
	PaperLogSD      = 1.97
	PaperMeanAloneS = 3.0 * 60
	PaperWindowS    = 49 * 60
)

// Kinds lists the generator's trace kinds, the default first.
func Kinds() []string { return []string{Paper, Salus100} }

// generatePaper builds the Paper trace.
func generatePaper(cat *Catalog, o GenOptions) (*Trace, error) {
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x9a9e7))
	profiles := cat.measured()
	if len(profiles) == 0 {
		return nil, fmt.Errorf("the catalog has no measured training profile to draw the %s trace from", Paper)
	}
	n := o.Jobs
	window := PaperWindowS * float64(n) / 100 / o.Load
	arrivals := make([]float64, n)
	for i := 1; i < n; i++ {
		arrivals[i] = rng.Float64() * window
	}
	slices.Sort(arrivals)
	picks := make([]*Profile, n)
	shape := make([]float64, n) // each job's training time, up to the common scale
	for i := range n {
		picks[i] = profiles[rng.IntN(len(profiles))]
		shape[i] = math.Exp(PaperLogSD * rng.NormFloat64())
	}
	iters := func(scale float64, i int) int {
		return max(1, int(math.Round(scale*shape[i]/picks[i].IterS)))
	}
	meanAlone := func(scale float64) float64 {
		var sum float64
		for i := range n {
			sum += picks[i].StandaloneS(iters(scale, i))
		}
		return sum / float64(n)
	}
	scale, err := solveScale(meanAlone, PaperMeanAloneS)
	if err != nil {
		return nil, fmt.Errorf("%s trace, seed %d: %w", Paper, o.Seed, err)
	}
	t := &Trace{Name: traceName(o), Seed: o.Seed, Kind: Paper, Jobs: make([]Job, 0, n)}
	width := len(fmt.Sprint(n))
	for i := range n {
		p := picks[i]
		t.Jobs = append(t.Jobs, Job{
			ID:    fmt.Sprintf("job-%0*d", width, i+1),
			Model: p.Model, Batch: p.Batch, Kind: Train,
			Iterations: iters(scale, i),
			ArrivalS:   math.Round(arrivals[i]*1e3) / 1e3,
			Profile:    p,
		})
	}
	return t, nil
}

// solveScale finds the scale at which mean(scale) is closest to target: mean grows
// with the scale, in steps (iterations are whole), so bisection ends on the step
// nearest the target.
func solveScale(mean func(float64) float64, target float64) (float64, error) {
	lo, hi := 0.0, 1.0
	for mean(hi) < target {
		hi *= 2
		if hi > 1e12 {
			return 0, fmt.Errorf("no scale gives a mean time alone of %.0f s", target)
		}
	}
	if mean(lo) > target {
		return 0, fmt.Errorf("the jobs' start-ups alone average %.0f s, above the %.0f s mean the trace must have", mean(lo), target)
	}
	for range 100 {
		mid := (lo + hi) / 2
		if mean(mid) < target {
			lo = mid
		} else {
			hi = mid
		}
	}
	if math.Abs(mean(lo)-target) < math.Abs(mean(hi)-target) {
		return lo, nil
	}
	return hi, nil
}
