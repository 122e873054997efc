package workload

import (
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// Salus100 describes the generated stand-in for the paper's long-running training
// trace, which was never published (neither the mix, the arrival process nor the
// seed). The choices, and why:
//
//   - 100 jobs, as in the paper.
//   - Each job is a model and batch size drawn uniformly from the 33 measured
//     training profiles, so every profile Salus timed is equally likely.
//   - Each job's length is one of the measured 1, 5 and 10 minute runs (its iteration
//     count is that run's), with probabilities 0.5, 0.3 and 0.2: most jobs in shared
//     clusters are short (Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU
//     Clusters", ATC 2019), and short jobs stuck behind long ones are what sharing
//     is meant to fix.
//   - Arrivals form a Poisson process starting at 0. Its rate makes the offered load
//     (standalone GPU time asked for, per second of arrivals) equal load (1 by
//     default): a GPU run one job at a time is exactly as busy as the jobs ask, so
//     queues form by chance rather than by construction. --load scales the rate.
//
// Nothing here was tuned to the paper's results.
const Salus100 = "salus100"

// LengthMix is the probability of each duration class in generated traces.
var LengthMix = []struct {
	Class string
	P     float64
}{{"1min", 0.5}, {"5min", 0.3}, {"10min", 0.2}}

// GenOptions configures a generated trace.
type GenOptions struct {
	Kind string  // Paper (the default) or Salus100
	Seed int64   // the random seed; the same seed gives the same trace
	Jobs int     // number of jobs; 0 means the kind's default (100)
	Load float64 // arrival-rate multiplier; 0 means 1
}

// Generate builds a trace.
func Generate(cat *Catalog, o GenOptions) (*Trace, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	if o.Kind == Paper {
		return generatePaper(cat, o)
	}
	t := &Trace{Name: traceName(o), Seed: o.Seed, Kind: Salus100, Jobs: make([]Job, 0, o.Jobs)}
	for j := range salus100Jobs(cat, o) {
		t.Jobs = append(t.Jobs, j)
	}
	return t, nil
}

// GenerateStream is Generate as a stream, the same jobs in the same order. A
// salus100 trace is drawn job by job as the stream is read; a paper trace (whose
// iterations are scaled over all of its jobs) is built whole, then streamed.
func GenerateStream(cat *Catalog, o GenOptions) (*Stream, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	if o.Kind == Paper {
		t, err := generatePaper(cat, o)
		if err != nil {
			return nil, err
		}
		return t.Stream(), nil
	}
	return pull(traceName(o), o.Seed, func(*Stream) iter.Seq[*Job] {
		return func(yield func(*Job) bool) {
			for j := range salus100Jobs(cat, o) {
				if !yield(&j) { // a job of its own, freed when the run drops it
					return
				}
			}
		}
	}), nil
}

// resolve fills in the defaults of o and checks it.
func (o GenOptions) resolve() (GenOptions, error) {
	if o.Kind == "" {
		o.Kind = Paper
	}
	if !slices.Contains(Kinds(), o.Kind) {
		return o, fmt.Errorf("unknown trace kind %q: the generator knows %s", o.Kind, strings.Join(Kinds(), ", "))
	}
	if o.Jobs == 0 {
		o.Jobs = 100
	}
	if o.Load == 0 {
		o.Load = 1
	}
	if o.Jobs < 0 {
		return o, fmt.Errorf("jobs %d: give a positive number of jobs", o.Jobs)
	}
	if !(o.Load > 0) || math.IsInf(o.Load, 0) {
		return o, fmt.Errorf("load %v: give a positive arrival-rate multiplier (2: twice as fast)", o.Load)
	}
	return o, nil
}

// salus100Jobs draws the jobs of the salus100 trace of o, in arrival order.
func salus100Jobs(cat *Catalog, o GenOptions) iter.Seq[Job] {
	return func(yield func(Job) bool) {
		rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x5a105))
		profiles := cat.measured()
		// Mean standalone time of a job drawn from the mix sets the arrival rate.
		var mean float64
		for _, p := range profiles {
			for _, l := range LengthMix {
				mean += l.P * p.StandaloneS(p.Lengths[l.Class]) / float64(len(profiles))
			}
		}
		meanGap := mean / o.Load
		now := 0.0
		width := len(fmt.Sprint(o.Jobs))
		for i := 0; i < o.Jobs; i++ {
			if i > 0 {
				now += rng.ExpFloat64() * meanGap
			}
			p := profiles[rng.IntN(len(profiles))]
			class := pickClass(rng.Float64())
			if !yield(Job{
				ID:    fmt.Sprintf("job-%0*d", width, i+1),
				Model: p.Model, Batch: p.Batch, Kind: Train,
				Iterations: p.Lengths[class],
				// Millisecond arrivals keep CSV round trips exact.
				ArrivalS: math.Round(now*1e3) / 1e3,
				Profile:  p,
			}) {
				return
			}
		}
	}
}

// traceName is a generated trace's name: the kind alone for the default seed, size
// and load, else with what differs.
func traceName(o GenOptions) string {
	if o.Seed == 1 && o.Jobs == 100 && o.Load == 1 {
		return o.Kind
	}
	name := fmt.Sprintf("%s-seed%d", o.Kind, o.Seed)
	if o.Load != 1 {
		name += fmt.Sprintf("-load%s", strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", o.Load), "0"), "."))
	}
	return name
}

func pickClass(u float64) string {
	for _, l := range LengthMix {
		if u < l.P {
			return l.Class
		}
		u -= l.P
	}
	return LengthMix[len(LengthMix)-1].Class
}
