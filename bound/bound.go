// Package bound computes, for a trace on a device, lower bounds on the average job
// completion time (JCT) and the makespan that no scheduling scheme the simulator
// runs can beat, whatever its policy, sharing mode, memory or GPU placement: the
// yardstick "x times the bound" that tables print beside every scheme.
//
// It reads the trace and the device's figures only. It must not import the
// simulator or the core, run a schedule of theirs, or look at a run's results: a
// bound that depended on them would not be a bound.
//
// # The model the bounds rest on
//
// In the simulator (package sim, its device model sim.GPU) a job j arrives at r_j,
// spends its start-up s_j off the GPU (or holding it idle, under exclusive), then
// runs its n_j iterations one after another, each of standalone time t_j (the
// profile's time on this device), on each of its k_j GPUs at once. Iterations in
// flight together on a GPU share it: by demand (Salus lanes, MPS: with demands
// summing to D, each runs at 1/max(1, D) of its standalone speed) or by time
// slices (each of n gets at most 1/n). Every delay the schemes add (the per
// iteration round trip, switches, copies, context switches, queuing) only slows a
// job. Two facts follow:
//
//  1. No job runs faster than alone: JCT_j >= a_j, its standalone time,
//     a_j = s_j + n_j t_j + (n_j - 1) p_j, where p_j is the pause before each of
//     its later requests (inference jobs; zero for training).
//  2. The GPUs are a resource of m units per second (m GPUs). Job j needs
//     w_j = k_j d_j n_j t_j units (d_j <= 1 its demand): at any moment a GPU
//     serves iterations at speeds v_i <= 1 with sum(d_i v_i) <= 1 (by demand:
//     sum(d_i)/max(1, D) <= 1; time slices: sum(v_i) <= 1 and d_i <= 1), and j
//     needs none of it before r_j + s_j.
//
// # Average JCT
//
// By fact 2 any run is a schedule of one machine of speed m that processes the
// jobs' works w_j, released at r_j + s_j, possibly several at a time in shares.
// On one machine with release dates, preemptive shortest remaining processing
// time first (SRPT) minimises the sum of completion times among all such
// schedules (Schrage 1968; sharing the machine never helps: the shares can be
// rearranged, earliest completion first, so that no job ends later). So
// sum(C_j - r_j) >= sum(C_j^SRPT - r_j): the work bound. Fact 1 gives
// sum(JCT_j) >= sum(a_j): the alone bound. Both bound the same sum, so their
// maximum does; divided by the number of jobs it bounds the average JCT. (Taking
// each job's own maximum of its SRPT completion and its alone time would not be
// valid: SRPT's individual completion times are not lower bounds job by job.)
//
// # Makespan
//
// Makespan is the last job's end less the first arrival. The last job ends no
// earlier than any job alone (fact 1: max(r_j + a_j)), nor than a single machine
// of speed m that never idles while work is released (fact 2): its last
// completion under SRPT, at least the first release plus all the work over m.
//
// What is left out keeps the bounds valid but loose: memory (jobs that cannot be
// resident together), a job's own speed limit (one job cannot use all m GPUs), the
// gaps between a job's iterations, and every overhead.
package bound

import (
	"container/heap"
	"fmt"
	"math"
	"sort"

	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/workload"
)

// Bound holds the lower bounds of one trace on one device, in seconds.
type Bound struct {
	// AvgJCTS is the bound on the average JCT: the larger of WorkAvgJCTS and
	// AloneAvgJCTS.
	AvgJCTS float64 `json:"avg_jct_s"`
	// WorkAvgJCTS is the average JCT of preemptive SRPT on one machine as fast as
	// all the GPUs together, on the jobs' GPU work.
	WorkAvgJCTS float64 `json:"work_avg_jct_s"`
	// AloneAvgJCTS is the average of the jobs' standalone times.
	AloneAvgJCTS float64 `json:"alone_avg_jct_s"`
	// MakespanS is the bound on the makespan: the larger of WorkMakespanS and
	// AloneMakespanS.
	MakespanS float64 `json:"makespan_s"`
	// WorkMakespanS is when the one machine finishes all the work, less the first
	// arrival.
	WorkMakespanS float64 `json:"work_makespan_s"`
	// AloneMakespanS is the latest arrival plus standalone time, less the first
	// arrival.
	AloneMakespanS float64 `json:"alone_makespan_s"`
	// GPUs is how many GPUs the machine's speed stands for.
	GPUs int `json:"gpus"`
	// AloneOnly is set when the bounds come from the jobs' times alone, without
	// their GPU work (Alone: an event log does not give the jobs' demands).
	AloneOnly bool `json:"alone_only,omitempty"`
}

// Job is what the bounds need of one job, its times on the device.
type Job struct {
	// ArrivalS is when it arrives; ReleaseS when it can first use the GPU (after
	// its start-up), at least ArrivalS.
	ArrivalS, ReleaseS float64
	// WorkS is the GPU work it needs: GPU-seconds of the whole device's compute.
	WorkS float64
	// AloneS is how long it takes alone, arrival to end.
	AloneS float64
}

// Jobs converts a trace's jobs to their figures on device d. It fails on a job
// whose figures are out of range or that needs more GPUs than d has.
func Jobs(t *workload.Trace, d device.Device) ([]Job, error) {
	gpus := d.Count()
	out := make([]Job, 0, len(t.Jobs))
	for _, j := range t.Jobs {
		p := j.Profile
		iterS := d.IterS(p.IterS)
		switch {
		case j.GPUCount() > gpus:
			return nil, fmt.Errorf("job %s: needs %d GPUs at once, the device has %d: give a device with more GPUs (--gpus)", j.ID, j.GPUCount(), gpus)
		case !finiteNonNegative(iterS) || !finiteNonNegative(p.StartupS) || !finiteNonNegative(j.ArrivalS) || !finiteNonNegative(j.PauseS) || j.Iterations < 0:
			return nil, fmt.Errorf("job %s: iteration time, start-up, arrival, pause and iterations must be finite and not negative", j.ID)
		}
		n := float64(j.Iterations)
		// A demand above 1 cannot be (the trace readers refuse it); counted as 1,
		// the resource a GPU gives in a second, it keeps the bound valid.
		demand := math.Min(math.Max(p.Demand, 0), 1)
		alone := p.StartupS + n*iterS
		if j.Iterations > 1 {
			// The simulator waits the pause after each request but the last, whatever
			// the job's kind.
			alone += (n - 1) * j.PauseS
		}
		out = append(out, Job{ArrivalS: j.ArrivalS, ReleaseS: j.ArrivalS + p.StartupS,
			WorkS: float64(j.GPUCount()) * demand * n * iterS, AloneS: alone})
	}
	return out, nil
}

func finiteNonNegative(x float64) bool { return x >= 0 && !math.IsInf(x, 1) }

// Of returns the bounds of trace t on device d (its GPU count included).
func Of(t *workload.Trace, d device.Device) (Bound, error) {
	if t == nil || len(t.Jobs) == 0 {
		return Bound{}, fmt.Errorf("the trace has no jobs: a bound needs at least one")
	}
	jobs, err := Jobs(t, d)
	if err != nil {
		return Bound{}, fmt.Errorf("trace %s: %w", t.Name, err)
	}
	return Compute(jobs, d.Count())
}

// Compute returns the bounds of jobs on a machine of gpus GPUs.
func Compute(jobs []Job, gpus int) (Bound, error) {
	if len(jobs) == 0 {
		return Bound{}, fmt.Errorf("no jobs: a bound needs at least one")
	}
	if gpus < 1 {
		return Bound{}, fmt.Errorf("gpus is %d: a device has at least one GPU", gpus)
	}
	ends := SRPT(jobs, float64(gpus))
	first, lastWork, lastAlone := math.Inf(1), math.Inf(-1), math.Inf(-1)
	var sumWork, sumAlone float64
	for i, j := range jobs {
		first = math.Min(first, j.ArrivalS)
		lastWork = math.Max(lastWork, ends[i])
		lastAlone = math.Max(lastAlone, j.ArrivalS+j.AloneS)
		sumWork += ends[i] - j.ArrivalS
		sumAlone += j.AloneS
	}
	n := float64(len(jobs))
	b := Bound{WorkAvgJCTS: sumWork / n, AloneAvgJCTS: sumAlone / n,
		WorkMakespanS: lastWork - first, AloneMakespanS: lastAlone - first, GPUs: gpus}
	b.AvgJCTS = math.Max(b.WorkAvgJCTS, b.AloneAvgJCTS)
	b.MakespanS = math.Max(b.WorkMakespanS, b.AloneMakespanS)
	return b, nil
}

// Alone returns the bounds that the jobs' arrivals and times alone give by
// themselves (fact 1): the average time alone, and the latest arrival plus time
// alone, less the first arrival. It is what an event log allows, which gives each
// job's time alone but not its demand: the work bounds are then not known.
func Alone(arrivalS, aloneS []float64) (Bound, error) {
	if len(arrivalS) == 0 || len(arrivalS) != len(aloneS) {
		return Bound{}, fmt.Errorf("%d arrivals and %d times alone: a bound needs one of each per job, at least one job", len(arrivalS), len(aloneS))
	}
	jobs := make([]Job, len(arrivalS))
	for i := range jobs {
		jobs[i] = Job{ArrivalS: arrivalS[i], ReleaseS: arrivalS[i], AloneS: aloneS[i]}
	}
	b, err := Compute(jobs, 1)
	b.WorkAvgJCTS, b.WorkMakespanS, b.GPUs, b.AloneOnly = 0, 0, 0, true
	return b, err
}

// SRPT simulates preemptive shortest-remaining-processing-time first on one
// machine of the given speed (work units per second) and returns each job's
// completion time, in the order of jobs. A job with no work completes at its
// release. It takes O(n log n) time: a heap of the released jobs by remaining
// work, and one event per release or completion.
func SRPT(jobs []Job, speed float64) []float64 {
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return jobs[order[a]].ReleaseS < jobs[order[b]].ReleaseS })
	ends := make([]float64, len(jobs))
	var h remaining
	now, next := 0.0, 0
	for next < len(order) || h.Len() > 0 {
		if h.Len() == 0 {
			now = math.Max(now, jobs[order[next]].ReleaseS)
		}
		for next < len(order) && jobs[order[next]].ReleaseS <= now {
			i := order[next]
			heap.Push(&h, item{job: i, left: jobs[i].WorkS})
			next++
		}
		top := &h[0]
		done := now + top.left/speed
		if next < len(order) && jobs[order[next]].ReleaseS < done {
			// A release comes first: run the shortest until then; the new job may
			// preempt it.
			at := jobs[order[next]].ReleaseS
			top.left = math.Max(top.left-(at-now)*speed, 0)
			heap.Fix(&h, 0)
			now = at
			continue
		}
		ends[top.job] = done
		now = done
		heap.Pop(&h)
	}
	return ends
}

// item is a released job and its work left.
type item struct {
	job  int
	left float64
}

// remaining is a min-heap of released jobs by work left, ties by job index so
// that the result does not depend on the heap's order.
type remaining []item

func (h remaining) Len() int { return len(h) }
func (h remaining) Less(a, b int) bool {
	return h[a].left < h[b].left || h[a].left == h[b].left && h[a].job < h[b].job
}
func (h remaining) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *remaining) Push(x any)   { *h = append(*h, x.(item)) }
func (h *remaining) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Ratio is x over the bound b, or 0 when either is not positive (a table shows
// "-"): how many times the bound a scheme's figure is.
func Ratio(x, b float64) float64 {
	if x <= 0 || b <= 0 {
		return 0
	}
	return x / b
}
