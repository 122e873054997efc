// Package sim is the discrete-event simulator: a virtual clock and a device model
// that says how long each iteration takes when others run beside it. It drives the
// scheduling core (package core) and writes the event log (package eventlog); it
// holds no policy logic of its own and computes no metrics.
package sim

import (
	"container/heap"
	"fmt"
	"math"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/workload"
)

// Options configures one simulated run.
type Options struct {
	Policy core.Policy
	Device Device
	// Sink receives the event log; nil discards it.
	Sink eventlog.Sink
}

// eps absorbs floating-point residue when deciding that a phase has ended.
const eps = 1e-9

type job struct {
	spec        workload.Job
	done        int  // iterations completed
	admitted    bool // has a lane
	startupDone bool // start-up (or, for inference, the pause after a request) is over
	lane        int
	requestedAt float64 // when the pending iteration (request) was asked for
}

// iteration is one iteration in flight. It first waits delay seconds of wall time
// (scheduling overhead and switching, the GPU not busy), then does work seconds of
// standalone GPU work at the rate the device gives it.
type iteration struct {
	job   *job
	lane  int
	delay float64
	work  float64
}

type timer struct {
	at  float64
	seq int
	job *job
}

type timers []timer

func (t timers) Len() int { return len(t) }
func (t timers) Less(i, j int) bool {
	if t[i].at != t[j].at {
		return t[i].at < t[j].at
	}
	return t[i].seq < t[j].seq
}
func (t timers) Swap(i, j int) { t[i], t[j] = t[j], t[i] }
func (t *timers) Push(x any)   { *t = append(*t, x.(timer)) }
func (t *timers) Pop() any {
	old := *t
	x := old[len(old)-1]
	*t = old[:len(old)-1]
	return x
}

type engine struct {
	o       Options
	sched   *core.Scheduler
	now     float64
	jobs    map[string]*job
	running []*iteration
	timers  timers
	seq     int
	left    int
	// resident is, under suspend/resume, the job whose persistent memory is on the
	// GPU in each lane.
	resident map[int]*job
}

// Run simulates the trace under o and writes the event log to o.Sink. It returns an
// error when a job can never run on the device or the core rejects a call (a bug).
func Run(t *workload.Trace, o Options) error {
	if o.Sink == nil {
		o.Sink = eventlog.Discard{}
	}
	e := &engine{o: o, sched: core.New(o.Policy, o.Device.CapacityMiB), jobs: map[string]*job{}, left: len(t.Jobs),
		resident: map[int]*job{}}
	o.Sink.Emit(eventlog.Event{Kind: eventlog.Run, Policy: o.Policy.Name, Engine: "sim", Mode: o.Policy.Mode,
		Trace: t.Name, Seed: t.Seed, CapacityMiB: o.Device.CapacityMiB, Device: o.Device.Name})
	for _, spec := range t.Jobs {
		if err := o.Policy.Placement.Feasible(spec.CoreJob(), o.Device.CapacityMiB); err != nil {
			return fmt.Errorf("trace %s: %w", t.Name, err)
		}
	}
	next := 0
	for e.left > 0 {
		// The next thing to happen: an arrival, a timer, or an iteration's phase end.
		at := math.Inf(1)
		if next < len(t.Jobs) {
			at = t.Jobs[next].ArrivalS
		}
		if len(e.timers) > 0 {
			at = math.Min(at, e.timers[0].at)
		}
		share := e.slowdown()
		for _, it := range e.running {
			if it.delay > 0 {
				at = math.Min(at, e.now+it.delay)
			} else {
				at = math.Min(at, e.now+it.work*share)
			}
		}
		if math.IsInf(at, 1) {
			return fmt.Errorf("simulation stalled at %.3fs with %d jobs left: the scheduler admitted none of them", e.now, e.left)
		}
		e.advance(at, share)
		if err := e.finishIterations(); err != nil {
			return err
		}
		for len(e.timers) > 0 && e.timers[0].at <= e.now {
			tm := heap.Pop(&e.timers).(timer)
			if err := e.startupDone(tm.job); err != nil {
				return err
			}
		}
		for next < len(t.Jobs) && t.Jobs[next].ArrivalS <= e.now {
			if err := e.arrive(t.Jobs[next]); err != nil {
				return err
			}
			next++
		}
	}
	return nil
}

// slowdown is how much slower than alone every iteration in its work phase runs.
// Iterations running together (lanes, MPS) share compute by their demands: when
// those sum to more than one, each slows by the sum. Under time-slicing the GPU runs
// one process at a time, so n resident iterations each get a 1/n share of the
// slices, less the context switches.
func (e *engine) slowdown() float64 {
	var sum float64
	n := 0
	for _, it := range e.running {
		if it.delay <= 0 {
			sum += it.job.spec.Profile.Demand
			n++
		}
	}
	if e.o.Policy.Mode == core.ModeTimeslice {
		if n <= 1 {
			return 1
		}
		return float64(n) / e.o.Device.TimesliceEfficiency()
	}
	return math.Max(1, sum)
}

func (e *engine) advance(to, share float64) {
	dt := to - e.now
	for _, it := range e.running {
		if it.delay > 0 {
			it.delay -= dt
			if it.delay < eps {
				it.delay = 0
			}
		} else {
			it.work -= dt / share
		}
	}
	e.now = to
}

func (e *engine) finishIterations() error {
	var still []*iteration
	var done []*iteration
	for _, it := range e.running {
		if it.delay == 0 && it.work <= eps {
			done = append(done, it)
		} else {
			still = append(still, it)
		}
	}
	e.running = still
	for _, it := range done {
		if err := e.iterationEnded(it); err != nil {
			return err
		}
	}
	return nil
}

func (e *engine) arrive(s workload.Job) error {
	j := &job{spec: s}
	e.jobs[s.ID] = j
	p := s.Profile
	e.o.Sink.Emit(eventlog.Event{T: e.now, Kind: eventlog.Arrive, Job: s.ID, Model: p.Model, JobKind: s.Kind,
		Iterations: s.Iterations, StartupS: p.StartupS, DeclaredS: e.o.Device.DeclaredS(s),
		PersistentMiB: p.PersistentMiB, EphemeralMiB: p.EphemeralMiB})
	if !e.o.Policy.StartupOnGPU {
		e.after(p.StartupS, j)
	}
	ds, err := e.sched.Arrive(e.now, e.o.Device.CoreJob(s))
	if err != nil {
		return err
	}
	return e.apply(ds)
}

func (e *engine) after(d float64, j *job) {
	e.seq++
	heap.Push(&e.timers, timer{at: e.now + d, seq: e.seq, job: j})
}

func (e *engine) startupDone(j *job) error {
	j.startupDone = true
	if !j.admitted {
		return nil
	}
	return e.request(j)
}

func (e *engine) request(j *job) error {
	j.requestedAt = e.now
	ds, err := e.sched.Request(e.now, j.spec.ID)
	if err != nil {
		return err
	}
	return e.apply(ds)
}

func (e *engine) apply(ds []core.Decision) error {
	for _, d := range ds {
		j := e.jobs[d.Job]
		switch d.Action {
		case core.Admit:
			j.admitted, j.lane = true, d.Lane
			e.o.Sink.Emit(eventlog.Event{T: e.now, Kind: eventlog.Admit, Job: d.Job, Lane: d.Lane,
				LaneMiB: d.LaneSize, HoldsGPU: e.o.Policy.StartupOnGPU})
			e.memory(d.Lane)
			if e.o.Policy.StartupOnGPU {
				e.after(j.spec.Profile.StartupS, j)
			} else if j.startupDone {
				if err := e.request(j); err != nil {
					return err
				}
			}
		case core.Start:
			copied := e.swapIn(j, d.Lane)
			e.o.Sink.Emit(eventlog.Event{T: e.now, Kind: eventlog.IterStart, Job: d.Job, Lane: d.Lane, Prev: d.Previous, CopyMiB: copied})
			it := &iteration{job: j, lane: d.Lane, work: e.o.Device.IterS(j.spec.Profile.IterS), delay: e.o.Device.CopyS(copied)}
			if gated(e.o.Policy) {
				it.delay += e.o.Device.IterOverheadS
			}
			if d.Previous != "" {
				it.delay += e.o.Device.SwitchS
			}
			if it.delay < eps {
				it.delay = 0
			}
			e.running = append(e.running, it)
		}
	}
	return nil
}

// gated is true when a scheduler grants every iteration, so each pays the round
// trip; without sharing, or with separate processes, nothing stands in between.
func gated(p core.Policy) bool { return p.Mode == core.ModeSalus || p.Mode == core.ModeSuspend }

// swapIn makes j resident in its lane under suspend/resume and returns the MiB
// copied over PCIe: the resident job's persistent memory out, j's in.
func (e *engine) swapIn(j *job, lane int) float64 {
	if !e.o.Policy.Swapped || e.resident[lane] == j {
		return 0
	}
	copied := j.spec.Profile.PersistentMiB
	if prev := e.resident[lane]; prev != nil {
		copied += prev.spec.Profile.PersistentMiB
	}
	e.resident[lane] = j
	return copied
}

func (e *engine) memory(lane int) {
	ev := eventlog.Event{T: e.now, Kind: eventlog.Memory, Lane: lane}
	for _, l := range e.sched.Lanes() {
		if l.ID != lane {
			continue
		}
		ev.LaneMiB, ev.PersistentMiB, ev.EphemeralMiB, ev.Jobs = l.Size, l.Persistent, l.MaxEphemeral, l.Jobs
		if e.o.Policy.Swapped {
			// Only one job is resident; at most the biggest.
			ev.PersistentMiB, ev.EphemeralMiB = l.BiggestPersistent, l.BiggestEphemeral
		}
	}
	e.o.Sink.Emit(ev)
}

func (e *engine) iterationEnded(it *iteration) error {
	j := it.job
	gpu := e.o.Device.IterS(j.spec.Profile.IterS)
	e.o.Sink.Emit(eventlog.Event{T: e.now, Kind: eventlog.IterEnd, Job: j.spec.ID, Lane: it.lane, GPU: gpu})
	if err := e.sched.IterationEnd(e.now, j.spec.ID, gpu); err != nil {
		return err
	}
	j.done++
	if j.spec.Kind == workload.Infer {
		e.o.Sink.Emit(eventlog.Event{T: e.now, Kind: eventlog.Served, Job: j.spec.ID, Latency: e.now - j.requestedAt})
	}
	if j.done < j.spec.Iterations {
		if j.spec.PauseS <= 0 {
			return e.request(j)
		}
		// An inference job waits for its next request: the lane is free meanwhile.
		ds, err := e.sched.Yield(e.now, j.spec.ID)
		if err != nil {
			return err
		}
		j.startupDone = false
		e.after(j.spec.PauseS, j)
		return e.apply(ds)
	}
	e.o.Sink.Emit(eventlog.Event{T: e.now, Kind: eventlog.Finish, Job: j.spec.ID})
	e.left--
	if e.resident[it.lane] == j {
		delete(e.resident, it.lane) // a finished job's memory is freed, not copied out
	}
	ds, err := e.sched.Leave(e.now, j.spec.ID)
	if err != nil {
		return err
	}
	e.memory(it.lane)
	return e.apply(ds)
}
