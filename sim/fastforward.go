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
	// checked: its lane has ready jobs, and the core says yes to its first ok
	// boundaries (before the stretch's end); ok is at first all but its last.
	checked bool
	ok      int
}

// endOf is when the work phase of w's job's iteration done+k ends, its GPU's
// share unchanged: its iterations follow each other from w's finish.
func (j *job) endOf(g *GPU, w *Work, k int) time.Duration {
	return g.endAt(w.finish.add(int64(j.at(j.done+k+1) - j.at(j.done+1))))
}

// stretch takes every boundary that nothing can change before limit (the next
// arrival), the next timer or the next instant a waiting job starts starving
// (the core decides admission then: NextDeadline).
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
	if d, ok := e.sched.NextDeadline(); ok {
		limit = min(limit, max(d, e.now)) // a waiting job starts starving: the core decides then
	}
	if e.stretchSkip > 0 {
		// The last tries took nothing: iterations overlap here, and stretches wait.
		e.stretchSkip--
		return nil
	}
	cands := e.cands[:0]
	for gi, g := range e.gpus {
		if g.Running() == 0 {
			continue
		}
		at, _ := g.nextAt()
		ok := len(g.delays) == 0
		from := len(cands)
		for _, w := range g.works {
			if !ok {
				break
			}
			j := w.job
			ok = j != nil && j.parts == 1 && len(j.works) == 1 && j.spec.Kind != workload.Infer && j.iterS*1e9 >= 1
			if !ok {
				break
			}
			kind := e.sched.Stretchable(w.Job)
			if ok = kind != core.Never; !ok {
				break
			}
			// Its last iteration's end changes the share.
			last := j.spec.Iterations - 1 - j.done
			limit = min(limit, j.endOf(g, w, last))
			if last > 0 {
				cands = append(cands, stretchCand{w: w, g: gi, checked: kind == core.Checked, ok: last})
			}
		}
		if !ok {
			cands = cands[:from]
			limit = min(limit, at) // this GPU's next end may change what runs
		}
	}
	e.cands = cands
	// The checked jobs: where the core would say no, at a boundary before limit,
	// the lane may switch and its GPU's share change, so the stretch of every job
	// ends there.
	for i := range cands {
		c := &cands[i]
		if !c.checked {
			continue
		}
		j, g := c.w.job, e.gpus[c.g]
		p, _ := e.sched.Probe(c.w.Job)
		k := 0
		for ; k < c.ok; k++ {
			end := j.endOf(g, c.w, k)
			if end >= limit {
				break
			}
			if !p.Next(end, j.iteration(j.done+k)) {
				limit = end
				break
			}
		}
		c.ok = k
	}
	n := 0
	for i := range cands {
		c := &cands[i]
		j, g := c.w.job, e.gpus[c.g]
		if c.ok == 0 || g.endOf(c.w) >= limit {
			continue
		}
		// The boundaries before limit: the largest m with iteration done+m-1 ending
		// before it, short of the last iteration (or of the core's no).
		lo, hi := 1, c.ok // lo fits
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
		e.stretchMiss = min(2*e.stretchMiss+1, 63)
		e.stretchSkip = e.stretchMiss
		return nil
	}
	e.stretchMiss = 0
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
		if err := e.sched.ContinueN(c.last, w.Job, c.m, gpu); err != nil {
			return err
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
