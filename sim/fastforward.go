package sim

import (
	"container/heap"
	"slices"
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/workload"
)

// Stretches. Between two events that change what runs (an arrival, a timer, a
// job's last iteration, a part of an iteration whose lane has another job
// ready, a delay), every GPU's share is constant, so every running iteration
// ends where its GPU's virtual clock says, and a job whose lane has nothing
// else ready simply goes on: its boundaries are Continues of the core. A
// stretch takes, for every such job, all its boundaries before the next event
// at once: O(log iterations) per job however many there are, where the
// iteration-by-iteration engine takes each (TestStretchesAreExact: the
// per-job results are identical). Its events are one Stretch record per job.

// stretchCand is a job whose boundaries a stretch takes.
type stretchCand struct {
	w    *Work
	g    int
	m    int           // boundaries taken
	last time.Duration // the last one
	prev time.Duration // the one before it (the order of same-instant ties)
}

// endOf is when the work phase of w's job's iteration done+k ends, its GPU's
// share unchanged: its iterations follow each other from w's finish.
func (j *job) endOf(g *GPU, w *Work, k int) time.Duration {
	return g.endAt(w.finish.add(int64(j.at(j.done+k+1) - j.at(j.done+1))))
}

// stretch takes every boundary that nothing can change before limit (the next
// arrival) or the next timer.
func (e *engine) stretch(limit time.Duration) error {
	if e.noFastForward {
		return nil
	}
	if e.o.Policy.Gated && e.iterOverhead > 0 {
		return nil // each iteration's overhead changes its GPU's share
	}
	if len(e.timers) > 0 {
		limit = min(limit, e.timers[0].at)
	}
	cands := e.cands[:0]
	var checked *Work
	for gi, g := range e.gpus {
		if g.Running() == 0 {
			continue
		}
		at, _ := g.nextAt()
		ok := len(g.delays) == 0
		for _, w := range g.works {
			if !ok {
				break
			}
			j := w.job
			ok = j != nil && j.parts == 1 && len(j.works) == 1 && j.spec.Kind != workload.Infer && j.iterS*1e9 >= 1
			if ok {
				switch e.sched.Stretchable(w.Job) {
				case core.Never:
					ok = false
				case core.Checked:
					// One job a stretch whose boundaries the core checks one by one.
					if ok = checked == nil; ok {
						checked = w
					}
				}
			}
		}
		if !ok {
			limit = min(limit, at) // this GPU's next end may change what runs
			continue
		}
		for _, w := range g.works {
			j := w.job
			// Its last iteration's end changes the share.
			last := j.spec.Iterations - 1 - j.done
			limit = min(limit, j.endOf(g, w, last))
			if last > 0 {
				cands = append(cands, stretchCand{w: w, g: gi})
			}
		}
	}
	e.cands = cands
	// The checked job first: where the core says no, at a boundary before limit,
	// its lane may switch and its GPU's share change, so the stretch of every job
	// ends there.
	for i := range cands {
		c := &cands[i]
		if c.w != checked {
			continue
		}
		j, g := c.w.job, e.gpus[c.g]
		for k := 0; k < j.spec.Iterations-1-j.done; k++ {
			end := j.endOf(g, c.w, k)
			if end >= limit {
				break
			}
			ok, err := e.sched.Continue(end, c.w.Job, j.iteration(j.done+k))
			if err != nil {
				return err
			}
			if !ok {
				limit = end
				break
			}
			c.m, c.prev, c.last = c.m+1, c.last, end
		}
		if c.m == 1 {
			c.prev = -1
		}
	}
	n := 0
	for i := range cands {
		c := &cands[i]
		j, g := c.w.job, e.gpus[c.g]
		if c.w == checked {
			if c.m > 0 {
				cands[n] = *c
				n++
			}
			continue
		}
		if g.endOf(c.w) >= limit {
			continue
		}
		// The boundaries before limit: the largest m with iteration done+m-1 ending
		// before it, short of the last iteration.
		lo, hi := 1, j.spec.Iterations-1-j.done // lo fits
		for lo < hi {
			mid := lo + (hi-lo+1)/2
			if j.endOf(g, c.w, mid-1) < limit {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		c.m = lo
		c.last = j.endOf(g, c.w, lo-1)
		c.prev = -1
		if lo > 1 {
			c.prev = j.endOf(g, c.w, lo-2)
		}
		cands[n] = *c
		n++
	}
	cands = cands[:n]
	if n == 0 {
		return nil
	}
	// In the order the iteration-by-iteration engine takes their last boundaries,
	// which is the order they start their next iteration in.
	slices.SortFunc(cands, func(a, b stretchCand) int {
		switch {
		case a.last != b.last:
			return cmpDur(a.last, b.last)
		case a.prev != b.prev:
			return cmpDur(a.prev, b.prev)
		case a.g != b.g:
			return a.g - b.g
		case a.w.seq < b.w.seq:
			return -1
		}
		return 1
	})
	for _, c := range cands {
		w, j, g := c.w, c.w.job, e.gpus[c.g]
		d := j.done
		gpu := j.at(d+c.m) - j.at(d)
		if d == 0 {
			gpu += j.firstExtra
		}
		if w != checked { // the checked job's boundaries are taken
			if err := e.sched.ContinueN(c.last, w.Job, c.m, gpu); err != nil {
				return err
			}
		}
		if e.log {
			e.emit(j, eventlog.StretchEvent(c.last, w.Job, w.Lane, c.m, gpu))
		}
		w.finish = w.finish.add(int64(j.at(d+c.m+1) - j.at(d+1)))
		j.done += c.m
		w.Left = j.iteration(j.done)
		j.requestedAt = c.last
		g.seq++
		w.seq = g.seq
		e.fastForwarded += c.m
	}
	for _, g := range e.gpus {
		if len(g.works) > 1 {
			heap.Init(&g.works)
		}
	}
	return nil
}

func cmpDur(a, b time.Duration) int {
	if a < b {
		return -1
	}
	return 1
}
