package sim

import (
	"container/heap"
	"fmt"
	"math"
	"slices"
	"time"
)

// Sealed lanes. Where the placement seals its lanes (core.Scheduler.SealsLanes:
// exclusive GPUs), a job alone on its GPU goes on at every boundary until its
// last iteration whatever happens elsewhere: no job can join its lane and no
// lane can open beside it. A stretch then parks it: its GPU leaves the busy
// GPUs, so that the events of other GPUs (arrivals, starts, ends) cost nothing
// on it, and when the simulation reaches the boundary that starts the job's
// last iteration, all its boundaries up to that one are taken at once, one
// stretch record: with the stretch of the others that passes that boundary
// (wakeEarly), among their records in time order, or else at that instant,
// before its other events. Its last iteration then ends as any other does.
// Elsewhere a job alone in its lane is parked the same way, to its last
// boundary before an admission could reach its GPU (core.Scheduler.Untouched).
// The run's cost then follows its decisions, not how many jobs run at once
// (the same work on 64 or 8,192 GPUs), and a job's log is one stretch record
// from its first iteration to its last, where an arrival anywhere used to end
// every running job's stretch.
//
// Taking the boundary with a stretch, or at its instant before the instant's
// other events (the iteration-by-iteration engine takes it among the other
// GPUs' iteration ends, by GPU), changes nothing but the order of the log:
// the job's lane and GPU are its own, and the order of requests the core
// keeps is only compared within a lane (TestSealedLanesAreExact).

// parkedJob is a parked job's stretch: m boundaries of w's job, the last at
// last, the one before at prev (-1: none), on GPU g; after is when the
// iteration that starts at last ends, its GPUs' next event once it wakes.
type parkedJob struct {
	w                 *Work
	g                 int
	m                 int
	last, prev, after time.Duration
}

// cand is p's stretch as a stretch's candidate, to be taken.
func (p *parkedJob) cand() stretchCand {
	return stretchCand{w: p.w, g: p.g, m: p.m, last: p.last, prev: p.prev}
}

// parkHeap is the parked jobs by their last boundary.
type parkHeap []parkedJob

func (h parkHeap) Len() int           { return len(h) }
func (h parkHeap) Less(i, j int) bool { return h[i].last < h[j].last }
func (h parkHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *parkHeap) Push(x any)        { *h = append(*h, x.(parkedJob)) }
func (h *parkHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	*h = old[:len(old)-1]
	return p
}

// park parks c, the one job on its GPU (a gang: on each of its ranks' GPUs,
// its lead's candidate), with nothing else pending (Free), until the
// boundary that starts its last iteration in a sealed lane, or else until the
// last before the horizon (the first instant an admission may reach one of
// its GPUs: core.Scheduler.Untouched) in a lane of its own. false where it
// cannot be parked (a lane of several jobs, no such boundary, one past the
// end of time).
func (e *engine) park(c *stretchCand) (bool, error) {
	j, g := c.w.job, e.gpus[c.g]
	if c.checked || c.turns != nil || c.ok < 1 || c.gang != nil {
		return false, nil
	}
	gpus := j.gpusOf(c.g)
	m := c.ok
	if !e.sealed {
		// Each arrival asks for a GPU at least: fewer than k arrive before the horizon.
		k := math.MaxInt
		for _, gi := range gpus {
			k = min(k, e.sched.Untouched(gi))
		}
		if k <= 0 {
			return false, nil
		}
		h, err := e.horizon(k)
		if err != nil || !e.sched.Alone(c.w.Job) {
			return false, err
		}
		if m = j.boundariesBefore(g, c.w, h, m); m == 0 {
			return false, nil
		}
	}
	last := j.endOf(g, c.w, m-1)
	if last >= maxTime {
		return false, nil
	}
	prev := time.Duration(-1)
	if m > 1 {
		prev = j.endOf(g, c.w, m-2)
	}
	after := j.endOf(g, c.w, m)
	heap.Push(&e.parked, parkedJob{w: c.w, g: c.g, m: m, last: last, prev: prev, after: after})
	for _, gi := range gpus {
		e.isParked[gi] = true
	}
	if len(gpus) > 1 {
		e.forwarded.parkedGangs++
	}
	return true, nil
}

// gpusOf is the GPUs of j, whose lead part runs on g: g alone, or a gang's
// ranks'.
func (j *job) gpusOf(g int) []int {
	if len(j.works) > 1 {
		return j.ranks
	}
	j.oneGPU[0] = g
	return j.oneGPU[:]
}

// leaveBusy takes the GPUs just parked out of the busy GPUs.
func (e *engine) leaveBusy() {
	e.busy = slices.DeleteFunc(e.busy, func(gi int) bool {
		if e.isParked[gi] {
			e.isBusy[gi] = false
			return true
		}
		return false
	})
}

// nextWake is the next parked job's last boundary; maxTime when none.
func (e *engine) nextWake() time.Duration {
	if len(e.parked) == 0 {
		return maxTime
	}
	return e.parked[0].last
}

// wakeBound lowers a stretch's limit to the end of the iteration after
// every parked job's last boundary before it: those jobs wake within the
// stretch (wakeEarly), and the next event of their GPUs may not pass its end.
// A job that wakes at or past the limit has its next event past it too.
func (e *engine) wakeBound(limit time.Duration) time.Duration {
	// The jobs that wake before limit are a subtree at the heap's root.
	stack := e.wakeStack[:0]
	if len(e.parked) > 0 {
		stack = append(stack, 0)
	}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if p := &e.parked[i]; p.last < limit {
			limit = min(limit, p.after)
			for c := 2*i + 1; c <= 2*i+2 && c < len(e.parked); c++ {
				stack = append(stack, c)
			}
		}
	}
	e.wakeStack = stack
	return limit
}

// wakeEarly adds to a stretch's candidates the parked jobs whose last
// boundary comes before its limit (woken, to be taken with the others, in
// taking order): were they woken at that boundary, the stretches before it
// would end there, and every running job's record with them.
func (e *engine) wakeEarly(cands []stretchCand, limit time.Duration) []stretchCand {
	for len(e.parked) > 0 && e.parked[0].last < limit {
		p := heap.Pop(&e.parked).(parkedJob)
		c := p.cand()
		c.woken = true
		cands = append(cands, c)
		e.forwarded.wokenEarly++
	}
	return cands
}

// unparked puts the GPUs of c, a parked job just taken, back among the busy.
func (e *engine) unparked(c *stretchCand) {
	for _, gi := range c.w.job.gpusOf(c.g) {
		e.isParked[gi] = false
		e.wake(gi)
	}
}

// unpark takes the stretches of the parked jobs whose last boundary is now,
// in the order the iteration-by-iteration engine takes those boundaries, and
// puts their GPUs back among the busy ones, each job in its last iteration.
func (e *engine) unpark() error {
	if e.nextWake() > e.now {
		return nil
	}
	waking := e.waking[:0]
	for len(e.parked) > 0 && e.parked[0].last <= e.now {
		p := heap.Pop(&e.parked).(parkedJob)
		if p.last < e.now {
			return fmt.Errorf("job %s: its stretch ended at %ss, passed at %ss", p.w.Job, seconds(p.last), seconds(e.now))
		}
		waking = append(waking, p.cand())
		e.forwarded.woken++
	}
	e.waking = waking
	for _, c := range e.inTakingOrder(waking) {
		if err := e.take(c); err != nil {
			return err
		}
		e.unparked(c)
	}
	return nil
}
