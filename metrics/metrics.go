// Package metrics computes a run's results from its event log, whichever engine
// wrote it: makespan, average and p95 job completion time, queuing, GPU busy time,
// inference latency, each job's slowdown against running alone and the fairness of
// the slowdowns (Jain's index, the worst one), and, given the jobs' priorities
// (SetClasses), each priority class's completion times, waits, latencies and
// throughput. It is the only place these are computed; it reads events and
// never schedules.
package metrics

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/salusgo/salus/eventlog"
)

// JobResult is one job's outcome.
type JobResult struct {
	ID       string  `json:"job_id"`
	Model    string  `json:"model"`
	ArrivalS float64 `json:"arrival_s"`
	// ServiceS is when the job first got the GPU: when it took the whole GPU
	// (exclusive runs), otherwise its first iteration's start less its start-up.
	ServiceS float64 `json:"service_s"`
	EndS     float64 `json:"end_s"`
	JCTS     float64 `json:"jct_s"`
	QueuingS float64 `json:"queuing_s"`
	GPUS     float64 `json:"gpu_s"`
	// GPUs is how many GPUs it was admitted on (a gang's width; 0: never admitted).
	GPUs int `json:"gpus,omitempty"`
	// AloneS is how long the job takes alone on the device (the arrive event's
	// alone_s); Slowdown is JCTS / AloneS. Both are zero when the engine did not log
	// the time alone: the job's slowdown is then not known.
	AloneS   float64 `json:"alone_s,omitempty"`
	Slowdown float64 `json:"slowdown,omitempty"`
	Lost     bool    `json:"lost,omitempty"`
}

// Result is what one run achieved.
type Result struct {
	Jobs        int     `json:"jobs"`
	Finished    int     `json:"finished"`
	Lost        int     `json:"lost"`
	MakespanS   float64 `json:"makespan_s"`
	AvgJCTS     float64 `json:"avg_jct_s"`
	P95JCTS     float64 `json:"p95_jct_s"`
	AvgQueuingS float64 `json:"avg_queuing_s"`
	// GPUBusy is the fraction of the makespan during which at least one iteration
	// ran, averaged over the node's GPUs.
	GPUBusy float64 `json:"gpu_busy"`
	// PeakMemoryMiB is the most memory allocated to lanes at once, all GPUs together.
	PeakMemoryMiB float64 `json:"peak_memory_mib"`
	// GPUs is how many GPUs the node had; PerGPU is each one's share, when more than one.
	GPUs   int         `json:"gpus,omitempty"`
	PerGPU []GPUResult `json:"per_gpu,omitempty"`
	// JainSlowdown is Jain's fairness index of the finished jobs' slowdowns,
	// (sum x)^2 / (n sum x^2): 1 when every job is slowed down alike, towards 1/n
	// when one job bears it all. MaxSlowdown is the worst slowdown. Both count only
	// the jobs whose time alone the log gives, and are zero when none does;
	// SlowdownUnknown counts the finished jobs left out for want of it.
	JainSlowdown    float64 `json:"jain_slowdown,omitempty"`
	MaxSlowdown     float64 `json:"max_slowdown,omitempty"`
	SlowdownUnknown int     `json:"slowdown_unknown,omitempty"`
	// Defrags counts the lane splits and merges (defrag events): zero unless the
	// policy defragments its lanes.
	Defrags int `json:"defrags,omitempty"`
	// Completion lists the jobs in the order they finished.
	Completion []JobResult `json:"-"`
	// Latency summarizes served inference requests per model.
	Latency map[string]Latency `json:"-"`
	// Classes are the figures of each priority class, most urgent first, when the
	// collector was given the jobs' priorities (SetClasses); nil otherwise.
	Classes []ClassResult `json:"classes,omitempty"`
}

// BusyRange is how busy the least and the most busy of the run's GPUs were;
// false on one GPU. A job kept on the GPU it was placed on can leave one idle
// while another queues, which the run's GPUBusy hides.
func (r Result) BusyRange() (lo, hi float64, ok bool) {
	if len(r.PerGPU) < 2 {
		return 0, 0, false
	}
	lo, hi = r.PerGPU[0].Busy, r.PerGPU[0].Busy
	for _, g := range r.PerGPU[1:] {
		lo, hi = min(lo, g.Busy), max(hi, g.Busy)
	}
	return lo, hi, true
}

// GPUResult is what one GPU of a node did over a run.
type GPUResult struct {
	GPU int `json:"gpu"`
	// Jobs counts the jobs admitted on it (a gang job counts on each of its GPUs).
	Jobs int `json:"jobs"`
	// Busy is the fraction of the makespan during which an iteration ran on it.
	Busy          float64 `json:"busy"`
	PeakMemoryMiB float64 `json:"peak_memory_mib"`
}

// Latency summarizes the request latencies of one model.
type Latency struct {
	Requests int     `json:"requests"`
	MeanS    float64 `json:"mean_s"`
	P99S     float64 `json:"p99_s"`
}

// Collector accumulates a log event by event; it is an eventlog.Sink, so an engine
// can feed it directly without the log ever being written out. The jobs' state is
// an eventlog.Tracker's; the collector adds what only the metrics need.
type Collector struct {
	track    *eventlog.Tracker
	order    []*eventlog.JobState // the jobs that ended, in that order
	lanes    map[int]float64
	laneGPUs map[int][]int
	memory   float64
	peakMem  float64
	// per GPU: memory allocated now and at its peak, jobs admitted
	gpuMem, gpuPeak []float64
	gpuJobs         []int
	latencies       map[string][]float64
	defrags         int
	err             error
	// Per priority class, when SetClasses was called: each job's priority, each
	// class's waits and latencies, and where each job's iterations stand.
	priority map[string]int
	classes  map[int]*classState
	waiting  map[*eventlog.JobState]*jobWait
}

// NewCollector returns an empty collector.
func NewCollector() *Collector {
	return &Collector{track: eventlog.NewTracker(), lanes: map[int]float64{}, laneGPUs: map[int][]int{}, latencies: map[string][]float64{}}
}

// Boundary is an iteration boundary (eventlog.BoundarySink): the metrics need no
// more of it than the tracker's bookkeeping.
func (c *Collector) Boundary(job string, handle, lane int, t, gpuS float64) {
	if c.err != nil {
		return
	}
	j, err := c.track.Boundary(job, handle, t, gpuS)
	if err != nil {
		c.err = err
		return
	}
	c.classBoundary(j, t)
}

// TakesTurns is true: the collector takes stretches of a lane's turns
// (eventlog.TurnsSink).
func (c *Collector) TakesTurns() bool { return true }

// NeedsTurnWaits says whether the collector needs the waits of the turns it
// takes (eventlog.TurnWaitsSink): when it computes per-class waits.
func (c *Collector) NeedsTurnWaits() bool { return c.classes != nil }

// Emit takes one event. Events must come in time order.
func (c *Collector) Emit(e eventlog.Event) {
	if c.err != nil {
		return
	}
	j, _, err := c.track.Step(e)
	if err != nil {
		c.err = err
		return
	}
	c.classEvent(e, j)
	switch e.Kind {
	case eventlog.Run:
		// After the first, a daemon that restarted on the same log after a crash: its
		// lanes are gone; the new daemon rebuilds them and logs their memory again.
		if c.track.Runs > 1 {
			clear(c.lanes)
			c.memory = 0
			clear(c.gpuMem)
		}
	case eventlog.Admit:
		c.laneGPUs[e.Lane] = j.GPUs
		c.grow()
		for _, g := range j.GPUs {
			c.gpuJobs[g]++
		}
	case eventlog.Memory:
		gpus, ok := c.laneGPUs[e.Lane]
		if !ok {
			if e.GPUIndex < 0 || e.GPUIndex >= c.track.GPUs+1<<10 {
				c.err = fmt.Errorf("memory of lane %d on GPU %d: the log names no such GPU", e.Lane, e.GPUIndex)
				return
			}
			gpus = []int{e.GPUIndex}
			c.laneGPUs[e.Lane] = gpus
			c.track.Grow(e.GPUIndex + 1)
		}
		c.grow()
		delta := e.LaneMiB - c.lanes[e.Lane]
		c.memory += delta * float64(len(gpus))
		c.lanes[e.Lane] = e.LaneMiB
		c.peakMem = math.Max(c.peakMem, c.memory)
		for _, g := range gpus {
			c.gpuMem[g] += delta
			c.gpuPeak[g] = math.Max(c.gpuPeak[g], c.gpuMem[g])
		}
		if e.LaneMiB == 0 && e.Jobs == 0 {
			// The lane closed: its entries go, or a run of a lane a job
			// (exclusive) would keep them for every job. An event of its id
			// after this is a new lane's, which names its GPUs again.
			delete(c.lanes, e.Lane)
			delete(c.laneGPUs, e.Lane)
		}
	case eventlog.Defrag:
		c.defrags++
	case eventlog.Served:
		c.latencies[j.Model] = append(c.latencies[j.Model], e.Latency)
	case eventlog.Finish, eventlog.Lost:
		// Its state no longer changes: its result is made from it when asked for.
		c.order = append(c.order, j)
	}
}

// result is the outcome of a job that ended.
func result(j *eventlog.JobState) JobResult {
	r := JobResult{ID: j.ID, Model: j.Model, ArrivalS: j.ArrivalS, ServiceS: j.ServiceS,
		EndS: j.EndS, JCTS: j.EndS - j.ArrivalS, QueuingS: j.ServiceS - j.ArrivalS, GPUS: j.GPUS, GPUs: len(j.GPUs), Lost: j.Lost}
	if j.AloneS > 0 && !j.Lost {
		r.AloneS, r.Slowdown = j.AloneS, r.JCTS/j.AloneS
	}
	return r
}

// grow sizes the per-GPU figures to the GPUs the log has named so far.
func (c *Collector) grow() {
	for len(c.gpuMem) < c.track.GPUs {
		c.gpuMem, c.gpuPeak, c.gpuJobs = append(c.gpuMem, 0), append(c.gpuPeak, 0), append(c.gpuJobs, 0)
	}
}

// Result computes the results over the finished jobs. It fails when the log was
// inconsistent or a job never ended.
func (c *Collector) Result() (Result, error) {
	if c.err != nil {
		return Result{}, c.err
	}
	res := Result{Jobs: c.track.Arrivals, PeakMemoryMiB: c.peakMem, Latency: map[string]Latency{}, Defrags: c.defrags}
	if missing := c.track.Unended(); len(missing) > 0 {
		return res, fmt.Errorf("%d of %d jobs never finished (first: %s): the run was cut short", len(missing), c.track.Arrivals, missing[0])
	}
	if len(c.order) == 0 {
		return res, fmt.Errorf("the log has no jobs")
	}
	first, last := math.Inf(1), math.Inf(-1)
	var jcts, slowdowns []float64
	var sumQ float64
	res.Completion = make([]JobResult, 0, len(c.order))
	for _, j := range c.order {
		r := result(j)
		res.Completion = append(res.Completion, r)
		first = math.Min(first, r.ArrivalS)
		last = math.Max(last, r.EndS)
		if r.Lost {
			res.Lost++
			continue
		}
		res.Finished++
		jcts = append(jcts, r.JCTS)
		sumQ += r.QueuingS
		if r.Slowdown > 0 {
			slowdowns = append(slowdowns, r.Slowdown)
			res.MaxSlowdown = math.Max(res.MaxSlowdown, r.Slowdown)
		} else {
			res.SlowdownUnknown++
		}
	}
	res.JainSlowdown = Jain(slowdowns)
	res.MakespanS = last - first
	c.grow()
	n := c.track.GPUs
	if res.MakespanS > 0 {
		res.GPUBusy = c.track.BusyS / res.MakespanS
		if n > 1 {
			var sum float64
			for _, b := range c.track.GPUBusyS {
				sum += b
			}
			res.GPUBusy = sum / float64(n) / res.MakespanS
		}
	}
	if n > 1 {
		res.GPUs = n
		for g := range n {
			r := GPUResult{GPU: g, Jobs: c.gpuJobs[g], PeakMemoryMiB: c.gpuPeak[g]}
			if res.MakespanS > 0 {
				r.Busy = c.track.GPUBusyS[g] / res.MakespanS
			}
			res.PerGPU = append(res.PerGPU, r)
		}
	}
	if n := len(jcts); n > 0 {
		res.AvgJCTS = mean(jcts)
		res.P95JCTS = Percentile(jcts, 0.95)
		res.AvgQueuingS = sumQ / float64(n)
	}
	res.Latency = SummarizeLatency(c.latencies)
	res.Classes = c.classResults(res.Completion)
	return res, nil
}

// Latencies returns the served requests' latencies per model, seconds.
func (c *Collector) Latencies() map[string][]float64 { return c.latencies }

// SummarizeLatency gives each model's request count, mean and p99 latency.
func SummarizeLatency(byModel map[string][]float64) map[string]Latency {
	out := map[string]Latency{}
	for model, ls := range byModel {
		out[model] = Latency{Requests: len(ls), MeanS: mean(ls), P99S: Percentile(ls, 0.99)}
	}
	return out
}

// Jain is Jain's fairness index of xs, (sum x)^2 / (n sum x^2): 1 when all are
// equal, 1/n when one holds everything; 0 for no values (or all zero).
func Jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if len(xs) == 0 || sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}

func mean(xs []float64) float64 { return sumOf(xs) / float64(len(xs)) }

// Percentile returns the value at index int(q*n) of the sorted values (the paper's
// definition), clamped to the last one.
func Percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(q * float64(len(s)))
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}

// FromFile computes the results of a log file. When its last line is cut off (a
// daemon killed mid-write) it returns the results of every event before that line
// together with an error wrapping eventlog.ErrTruncated, for the caller to report.
func FromFile(path string) (Result, error) { return fromFile(path, false) }

// FromFileByClass is FromFile with the per-priority figures (Result.Classes),
// each job's priority taken from its arrive event.
func FromFileByClass(path string) (Result, error) { return fromFile(path, true) }

func fromFile(path string, classes bool) (Result, error) {
	c := NewCollector()
	if classes {
		c.SetClasses(nil)
	}
	readErr := eventlog.ReadFile(path, func(e eventlog.Event) error {
		c.Emit(e)
		return c.err
	})
	if readErr != nil && !errors.Is(readErr, eventlog.ErrTruncated) {
		return Result{}, readErr
	}
	res, err := c.Result()
	if err != nil {
		return res, fmt.Errorf("%s: %w", path, err)
	}
	return res, readErr
}
