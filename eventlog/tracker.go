package eventlog

import (
	"fmt"
	"math"
	"sort"
)

// JobState is one job as its log tells it so far. A tracker holds one for every
// job that arrived, to the end of the log (a million at a million jobs): its
// flags go together, after the other fields, so that they take one word.
type JobState struct {
	ID, Model string
	// Index is its place among the arrivals, from 0.
	Index    int
	Kind     string
	ArrivalS float64
	StartupS float64
	// AloneS is how long it takes alone on the device (0: not known).
	AloneS float64
	// ServiceS: when it got the GPU (Started).
	ServiceS float64
	// Lane and GPUs: where it was admitted (its lane's GPUs: one, or a gang's).
	// GPUs may be shared with other jobs: do not modify.
	Lane int
	GPUs []int
	// GPUS is the GPU time of its iterations that ended, seconds.
	GPUS float64
	EndS float64
	// Admitted: it got a lane; HoldsGPU: it holds the whole GPU through start-up.
	Admitted, HoldsGPU bool
	// Started: it got the GPU, at ServiceS: when it took the whole GPU (exclusive
	// runs), otherwise its first iteration's start less its start-up (not before it
	// arrived); when it ended, if it never got it.
	Started bool
	// Running: an iteration of it is running.
	Running bool
	// Ended: it finished (or, with Lost, left without finishing) at EndS.
	Ended, Lost bool
}

// oneGPU[g] is GPU g alone, the GPUs of every one-GPU job admitted on it: a
// slice of this table, not one of its own a job.
var oneGPU = func() []int {
	gs := make([]int, maxGPUs)
	for g := range gs {
		gs[g] = g
	}
	return gs
}()

// Tracker follows the jobs of a log event by event: their arrival, admission,
// iterations and end, and how long at least one iteration ran. It is the one place
// this bookkeeping is done; the metrics and the pictures both build on it. It
// computes no metric.
type Tracker struct {
	jobs names // by name (names.go)
	// byHandle finds a job by its events' Handle, without hashing its name: the
	// lookup of every event of a simulated run.
	byHandle []*JobState
	// Runs counts the run headers: after the first, a daemon restarted on its log.
	Runs int
	// Arrivals counts the jobs that arrived.
	Arrivals int
	// Running counts the iterations running now.
	Running int
	// BusyS is how long at least one iteration ran, up to the last one that ended.
	BusyS     float64
	busySince float64
	// GPUs is how many GPUs the node has (the run header's count, or more when an
	// event names a GPU beyond it); GPUBusyS is, per GPU, how long at least one
	// iteration ran on it.
	GPUs       int
	GPUBusyS   []float64
	gpuRunning []int
	gpuSince   []float64
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	t := &Tracker{}
	t.growGPUs(1)
	return t
}

// maxGPUs bounds the GPUs a log may name, so that a corrupt log cannot make a
// reader allocate without end.
const maxGPUs = 1 << 16

// Grow makes room for n GPUs (at most 65536): a log may name a GPU beyond its
// header's count.
func (t *Tracker) Grow(n int) { t.growGPUs(min(n, maxGPUs)) }

// growGPUs makes room for n GPUs.
func (t *Tracker) growGPUs(n int) {
	for t.GPUs < n {
		t.GPUs++
		t.GPUBusyS = append(t.GPUBusyS, 0)
		t.gpuRunning = append(t.gpuRunning, 0)
		t.gpuSince = append(t.gpuSince, 0)
	}
}

// maxHandle bounds the handles a tracker keeps a table of; jobs with larger ones
// are found by name.
const maxHandle = 1 << 24

// find returns the job e is about: by its handle when it has one, by name
// otherwise.
func (t *Tracker) find(e *Event) (*JobState, bool) { return t.findBy(e.Job, e.Handle) }

func (t *Tracker) findBy(job string, handle int) (*JobState, bool) {
	if handle > 0 && handle < len(t.byHandle) && t.byHandle[handle] != nil {
		return t.byHandle[handle], true
	}
	j := t.jobs.get(job)
	return j, j != nil
}

// Job returns the state of the job named id (the latest to arrive under that
// name), or nil.
func (t *Tracker) Job(id string) *JobState { return t.jobs.get(id) }

// Unended returns the names of the jobs that arrived and never ended, sorted.
func (t *Tracker) Unended() []string {
	var out []string
	t.jobs.each(func(j *JobState) {
		if !j.Ended {
			out = append(out, j.ID)
		}
	})
	sort.Strings(out)
	return out
}

// Step takes one event, in time order, and returns the job it is about (nil for
// run and memory events) and whether an iteration of that job was running just
// before it. A run header after the first is a daemon that restarted on the same
// log after a crash: the iterations running then ended with it, at the header's
// time; the jobs keep their state, and go on when their clients resume them. Step
// fails on a job that arrives again before it ended, and on an event for a job
// that never arrived.
func (t *Tracker) Step(e Event) (j *JobState, wasRunning bool, err error) {
	switch e.Kind {
	case Run:
		if e.GPUs < 0 || e.GPUs > maxGPUs {
			return nil, false, fmt.Errorf("run header: %d GPUs: a node has 1 to %d", e.GPUs, maxGPUs)
		}
		t.growGPUs(max(e.GPUs, 1))
		if t.Runs++; t.Runs > 1 {
			t.jobs.each(func(j *JobState) { t.stop(j, e.T) })
		}
		return nil, false, nil
	case Memory, Defrag:
		return nil, false, nil
	case Snapshot:
		t.snapshot(e)
		return nil, false, nil
	case Arrive:
		// A name may come again once its job ended (a daemon's log runs on across
		// restarts): that is a new job.
		if j := t.jobs.get(e.Job); j != nil && !j.Ended {
			return nil, false, fmt.Errorf("job %q arrives twice", e.Job)
		}
		j := &JobState{ID: e.Job, Model: e.Model, Index: t.Arrivals, Kind: e.JobKind, ArrivalS: e.T, StartupS: e.StartupS, AloneS: e.AloneS}
		t.Arrivals++
		t.jobs.put(j)
		if h := e.Handle; h > 0 && h <= maxHandle {
			if h >= len(t.byHandle) {
				t.byHandle = append(t.byHandle, make([]*JobState, h+1-len(t.byHandle))...)
			}
			t.byHandle[h] = j
		}
		return j, false, nil
	}
	j, ok := t.find(&e)
	if !ok {
		return nil, false, fmt.Errorf("event %q for job %q, which never arrived", e.Kind, e.Job)
	}
	wasRunning = j.Running
	if e.Kind == Stretch && len(e.Turns) > 0 {
		return j, wasRunning, t.turns(j, e)
	}
	switch e.Kind {
	case Admit:
		j.Admitted, j.HoldsGPU, j.Lane = true, e.HoldsGPU, e.Lane
		j.GPUs = e.Gang
		if len(j.GPUs) == 0 {
			if g := e.GPUIndex; g >= 0 && g < maxGPUs {
				j.GPUs = oneGPU[g : g+1 : g+1]
			} else {
				j.GPUs = []int{g} // out of range: refused below
			}
		}
		for _, g := range j.GPUs {
			if g < 0 || g >= maxGPUs {
				return nil, false, fmt.Errorf("job %q admitted on GPU %d: a GPU index is in [0, %d)", e.Job, g, maxGPUs)
			}
			t.growGPUs(g + 1)
		}
		if e.HoldsGPU && !j.Started { // a job re-admitted after a restart was served already
			j.ServiceS, j.Started = e.T, true
		}
	case Migrate:
		// It moves between iterations, to one GPU: its GPU time from now on is
		// that GPU's.
		if j.Running || !j.Admitted {
			return nil, false, fmt.Errorf("job %q migrates while it runs an iteration or before its admission: a job moves at an iteration boundary", e.Job)
		}
		g := e.GPUIndex
		if g < 0 || g >= maxGPUs {
			return nil, false, fmt.Errorf("job %q migrates to GPU %d: a GPU index is in [0, %d)", e.Job, g, maxGPUs)
		}
		j.Lane, j.GPUs = e.Lane, oneGPU[g:g+1:g+1]
		t.growGPUs(g + 1)
	case IterStart:
		t.start(j, e.T)
	case IterEnd:
		t.stop(j, e.T)
		j.GPUS += e.GPU
	case Stretch:
		// Its boundaries, of which the last is all the bookkeeping needs.
		if !j.Running {
			return nil, false, fmt.Errorf("a stretch of job %q, which runs no iteration", e.Job)
		}
		if e.Iterations <= 0 {
			return nil, false, fmt.Errorf("a stretch of job %q of %d iterations", e.Job, e.Iterations)
		}
		t.stop(j, e.T)
		j.GPUS += e.GPU
		t.start(j, e.T)
	case Finish, Lost:
		t.stop(j, e.T)
		j.Ended = true
		j.EndS, j.Lost = e.T, e.Kind == Lost
		if !j.Started {
			j.ServiceS = e.T
		}
	}
	return j, wasRunning, nil
}

// turns takes a stretch of a lane's turns (Event.Turns): each job's GPU time;
// the first turn's job stops at e.T, unless it is next, the one that runs on.
func (t *Tracker) turns(next *JobState, e Event) error {
	before, ok := t.findBy(e.Turns[0].Job, e.Turns[0].Handle)
	if !ok || !before.Running {
		return fmt.Errorf("a stretch of turns in lane %d after job %q, which runs no iteration", e.Lane, e.Turns[0].Job)
	}
	for _, tu := range e.Turns {
		j, ok := t.findBy(tu.Job, tu.Handle)
		if !ok || tu.Iterations <= 0 {
			return fmt.Errorf("a stretch of turns in lane %d: job %q (%d iterations) never arrived or ran none", e.Lane, tu.Job, tu.Iterations)
		}
		waits := 0
		for _, w := range tu.Waits {
			if w.N <= 0 || !(w.S >= 0) {
				return fmt.Errorf("a stretch of turns in lane %d: job %q: %d waits of %g s (a count is at least 1, a wait at least 0)", e.Lane, tu.Job, w.N, w.S)
			}
			if waits += w.N; waits > tu.Iterations {
				// Each start in it began an iteration that ended in it.
				return fmt.Errorf("a stretch of turns in lane %d: job %q: more waits than its %d iterations", e.Lane, tu.Job, tu.Iterations)
			}
		}
		if tu.EndS > e.T {
			return fmt.Errorf("a stretch of turns in lane %d at %g s: job %q ended an iteration at %g s, after it", e.Lane, e.T, tu.Job, tu.EndS)
		}
		j.GPUS += tu.GPU
	}
	if before != next {
		if next.Running {
			return fmt.Errorf("a stretch of turns in lane %d starts job %q, which runs already", e.Lane, next.ID)
		}
		t.stop(before, e.T)
		t.start(next, e.T)
	}
	return nil
}

// JobBy is the job of id (or handle, when positive, as Event.Handle); nil when
// none arrived.
func (t *Tracker) JobBy(id string, handle int) *JobState {
	j, _ := t.findBy(id, handle)
	return j
}

// snapshot takes a journal's snapshot (the first line of a rotated segment).
// Its sessions are known from the events before it, unless the segments that
// held them were removed: those it brings in, as they were at the snapshot
// (arrived, admitted, their GPU time), so that a reader can start at any segment.
func (t *Tracker) snapshot(e Event) {
	for _, o := range e.Open {
		if j := t.jobs.get(o.Job); j != nil && !j.Ended {
			continue
		}
		j := &JobState{ID: o.Job, Model: o.Model, Index: t.Arrivals, Kind: o.Kind, ArrivalS: o.ArrivalS, StartupS: o.StartupS,
			AloneS: o.AloneS, GPUS: o.AttainedS}
		t.Arrivals++
		t.jobs.put(j)
		for _, g := range o.OnGPUs {
			if g >= 0 && g < maxGPUs {
				j.GPUs = append(j.GPUs, g)
				t.growGPUs(g + 1)
			}
		}
		j.Admitted = len(j.GPUs) > 0
		if o.Ended > 0 { // it was served before: when, the segments removed knew
			j.Started, j.ServiceS = true, o.ArrivalS
		}
	}
}

// start begins an iteration of j at time at.
func (t *Tracker) start(j *JobState, at float64) {
	if !j.Started {
		j.ServiceS, j.Started = math.Max(j.ArrivalS, at-j.StartupS), true
	}
	if t.Running == 0 {
		t.busySince = at
	}
	t.Running++
	j.Running = true
	for _, g := range j.GPUs {
		if t.gpuRunning[g] == 0 {
			t.gpuSince[g] = at
		}
		t.gpuRunning[g]++
	}
}

// Boundary is Step on an IterEnd of job at time at, after gpu seconds of GPU
// time, then on its IterStart at the same time: one iteration ended and the next
// began at once in the same lane. It saves the building of the two events.
func (t *Tracker) Boundary(job string, handle int, at, gpu float64) (*JobState, error) {
	j, ok := t.findBy(job, handle)
	if !ok {
		return nil, fmt.Errorf("event %q for job %q, which never arrived", IterEnd, job)
	}
	t.stop(j, at)
	j.GPUS += gpu
	t.start(j, at)
	return j, nil
}

// stop ends j's running iteration, if any, at time at.
func (t *Tracker) stop(j *JobState, at float64) {
	if !j.Running {
		return
	}
	j.Running = false
	t.Running--
	if t.Running == 0 {
		t.BusyS += at - t.busySince
	}
	for _, g := range j.GPUs {
		if t.gpuRunning[g]--; t.gpuRunning[g] == 0 {
			t.GPUBusyS[g] += at - t.gpuSince[g]
		}
	}
}
