package sim

import (
	"time"

	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/workload"
)

// fastForward runs, when one training iteration runs alone on the node (one GPU
// busy, one iteration on it), the iterations of that job that nothing can
// interrupt before the next event of the run (an arrival, a timer, or an instant
// the core must decide at: NextDeadline). Alone, an
// iteration takes exactly its standalone time, so its end is known, and the
// core's Continue says whether the job would simply go on at that boundary. They
// run in a tight loop that writes the events a one-by-one run writes, in the same
// order: the log is identical, and the core and the device model end in the same
// state (TestFastForwardIsExact). nextArrival is the next job's arrival.
func (e *engine) fastForward(nextArrival time.Duration) error {
	if e.noFastForward {
		return nil
	}
	var g *GPU
	for _, h := range e.gpus {
		switch {
		case len(h.running) == 0:
		case g != nil || len(h.running) > 1:
			return nil // more than one iteration in flight: they pace each other
		default:
			g = h
		}
	}
	if g == nil {
		return nil
	}
	w := g.running[0]
	j := w.job
	// A gang's rank never runs on without the others (Lockstep): only a job of one
	// GPU is fast-forwarded.
	if j == nil || j.parts != 1 || len(j.works) != 1 || j.spec.Kind == workload.Infer || j.done == 0 && j.firstExtra > 0 {
		return nil
	}
	next := nextArrival
	if len(e.timers) > 0 {
		next = min(next, e.timers[0].at)
	}
	if d, ok := e.sched.NextDeadline(); ok {
		next = min(next, d)
	}
	delay := time.Duration(0)
	if e.o.Policy.Gated {
		delay = e.iterOverhead
	}
	now := e.now
	// The boundaries of the iteration in flight, as j.iteration rounds them: one
	// rounding per iteration.
	prev, cur := j.at(j.done), j.at(j.done+1)
	for j.done+1 < j.spec.Iterations { // the last iteration takes the usual path
		end := now + w.Delay + w.Left
		if end >= next || end < now {
			break
		}
		gpu := max(cur-prev, 1)
		ok, err := e.sched.Continue(end, w.Job, gpu)
		if err != nil || !ok {
			return err
		}
		now = end
		e.now = now
		e.fastForwarded++
		g.fresh = false
		if e.log {
			// The iteration's end and the next one's start, as eventlog.IterEndEvent
			// and StartEvent make them, in one call where the sink takes it.
			eventlog.EmitBoundary(e.o.Sink, w.Job, j.handle, w.Lane, now.Seconds(), gpu.Seconds())
		}
		j.done++
		j.requestedAt = now
		prev, cur = cur, j.at(j.done+1)
		w.Delay, w.Left = delay, max(cur-prev, 1)
	}
	return nil
}
