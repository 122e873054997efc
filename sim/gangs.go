package sim

import (
	"container/heap"
	"fmt"
	"time"

	"github.com/salusgo/salus/interference"
	"github.com/salusgo/salus/workload"
)

// Gangs out of step. A gang's iteration ends when its last rank's part does;
// a rank done before the others holds its GPU (GPU.Hold) until then, and the
// next iteration starts on every rank at that instant. Where a rank shares its
// GPU (jobs side by side under a co-location model, or a share past 1 by
// demands), the ranks' parts end at different instants, and each of those
// ends was an event at which every GPU's stretch stopped.
//
// Yet none of them changes a rate: a hold presses on the works beside it as
// the rank's part did (the same job's row, the same demand), and its release
// and the rank's next part replace each other at one instant. So the gang's
// iterations follow from its ranks' clocks alone, as the
// iteration-by-iteration engine times them, while the rates the works beside
// each rank leave it are known: constant where nothing else on the GPU
// changes before the stretch's limit, or, under a co-location model, kept by
// the sideBySide that runs the lanes beside it boundary by boundary (the
// rank is a rank lane of the run: its press follows the lanes' switches,
// and each change of its rate is a segment; where they fill maxSegs, the
// run stops). A gang beside such a run is timed once the runs are done, and
// where it lowers the stretch's limit they run again to it:
//
//   - iteration k ends at T, the latest of its ranks' ends (endAfter on each
//     rank's clock); the part that ends it is the last of those ending then,
//     by GPU index, as the engine takes an instant's ends;
//   - a rank whose part ended at T itself goes on from its finish (GPU.Start
//     chains it), on its clock as it was;
//   - every other rank starts afresh at T: on a clock of its own at its
//     slowdown then (the sum of the model's terms of the works beside it),
//     or, on a GPU's one clock, from that clock's reading at T;
//   - a running rank's clock is re-based at each change of its rate before
//     its end (a part that ends at the instant of a change ends at the rate
//     before it, as GPU.Advance takes the ends before settling).
//
// A stretch takes a gang's boundaries before its limit and, in the iteration
// then in flight, the parts that end before the limit (each rank a hold from
// its end), so that no part's end falls between the stretch's start and its
// limit. gangRun keeps the ends it timed, so that the core's probes and the
// count of boundaries before the limit read them once.

// gangRank is one rank of a gangRun: where its part of the iteration stands.
type gangRank struct {
	gi   int     // its GPU, by index
	c    clock   // the clock its part runs on: its own (own), or its GPU's
	own  bool    // its GPU runs works side by side, each on a clock of its own
	s    float64 // own: its slowdown, the rate of a clock started afresh
	f    vtime   // its part's virtual finish on c
	end  time.Duration
	held bool // its part has ended (at end), and it holds its GPU
	// segs, where a sideBySide ran the lanes beside it (own), are its rates
	// over the run: from segs[i].t0 on, segs[i].share, the first from the
	// stretch's start; k is the one c was last re-based to. side and lane
	// are the run and its rank lane (sideOf).
	segs       []clock
	k          int
	side, lane int
}

// endFrom is when the rank's part ends, from from on: its clock is re-based
// at each change of its rate before then, as GPU.settleEach re-bases it, a
// part that ends at the instant of a change ending at the rate before it.
func (x *gangRank) endFrom(from time.Duration) time.Duration {
	for {
		t := x.c.endAfter(x.f, from)
		if x.k+1 >= len(x.segs) || x.segs[x.k+1].t0 >= t {
			return t
		}
		x.k++
		x.next()
		from = max(from, x.segs[x.k].t0)
	}
}

// next takes the rank's clock to segment k: its own re-based to that rate,
// or the GPU's one clock as the run re-based it.
func (x *gangRank) next() {
	a := &x.segs[x.k]
	if x.own {
		x.c.reRate(a.t0, a.share)
	} else {
		x.c = *a
	}
}

// clockAt is the GPU's one clock at t (a rank not on its own).
func (x *gangRank) clockAt(t time.Duration) *clock {
	for x.k+1 < len(x.segs) && x.segs[x.k+1].t0 <= t {
		x.k++
		x.c = x.segs[x.k]
	}
	return &x.c
}

// rateAt is the rank's slowdown at t, after the changes at t: that of a
// clock started afresh then.
func (x *gangRank) rateAt(t time.Duration) float64 {
	if len(x.segs) == 0 {
		return x.s
	}
	for x.k+1 < len(x.segs) && x.segs[x.k+1].t0 <= t {
		x.k++
	}
	return x.segs[x.k].share
}

// gangRun is a gang out of step whose ranks' rates a stretch keeps: its
// ranks where the stretch began, and the ends of its iterations from there.
type gangRun struct {
	j   *job
	gen uint64 // the stretch it was timed for (engine.stretchGen); ok: it can be
	ok  bool
	// seen: the stretch met it (on the first of its GPUs it looked at, which
	// the gang is a candidate of); live: that GPU's works can all be stretched.
	seen, live bool
	// coupled: a rank goes beside lanes a sideBySide runs (beside): the gang
	// is timed once the runs have kept its ranks' rates (gangBounds).
	coupled bool
	taken   bool          // takeGang took it
	last    int           // its iterations left after the one in flight (a candidate's ok)
	now     time.Duration // the stretch's start
	init    []gangRank
	base    []gangRank // init, each running rank's end timed (prime)
	// at is the ranks as iteration j.done+len(ends) runs; ends[k] is when
	// iteration j.done+k ends, and by[k] the GPU whose part's end ends it.
	at   []gangRank
	ends []time.Duration
	by   []int
	took []gangRank // ranksAfter's
}

// steadyGang is j's gangRun for this stretch, or nil: j is a gang whose every
// rank runs its part, or holds its GPU, with nothing delayed on the GPU, and
// at least one rank still runs. Answered once a stretch.
func (e *engine) steadyGang(j *job) *gangRun {
	r := j.gang
	if r != nil && r.gen == e.stretchGen {
		if r.ok {
			return r
		}
		return nil
	}
	if r == nil {
		r = &gangRun{j: j}
		j.gang = r
	}
	r.gen, r.ok, r.seen, r.live, r.coupled, r.taken = e.stretchGen, false, false, false, false, false
	r.init, r.ends, r.by = r.init[:0], r.ends[:0], r.by[:0]
	if j.spec.Kind == workload.Infer || j.iterS*1e9 < 1 || len(j.holds) != len(j.works) {
		return nil
	}
	running := false
	for i := range j.works {
		g := j.rankGPUs[i]
		if len(g.delays) > 0 {
			return nil
		}
		g.settle()
		w, h := &j.works[i], &j.holds[i]
		x := gangRank{gi: j.ranks[i], own: g.each, c: g.clock}
		switch {
		case w.gpu == g && w.working && !w.held:
			running = true
			x.f = w.finish
			if g.each {
				x.c, x.s = w.own, interference.SlowdownOf(w.press)
			}
		case h.gpu == g && h.held && h.working:
			x.held, x.end = true, w.endedAt
			if g.each {
				x.s = interference.SlowdownOf(h.press)
			}
		default:
			return nil
		}
		r.init = append(r.init, x)
	}
	if !running {
		return nil
	}
	e.gangs = append(e.gangs, r)
	r.last, r.now = j.spec.Iterations-1-j.done, e.now
	r.prime()
	r.ok = true
	return r
}

// beside makes the gang's rank on g a rank lane, lane, of sides[side].
func (r *gangRun) beside(g *GPU, side, lane int) {
	for i := range r.init {
		if r.j.rankGPUs[i] == g {
			r.init[i].side, r.init[i].lane = side, lane
			r.init[i].segs = []clock{} // not nil: timed on the run's rates
		}
	}
	r.coupled = true
}

// prime times the running ranks' parts from the stretch's start, on the
// rates they have (segs), and forgets the iterations timed before.
func (r *gangRun) prime() {
	r.base = append(r.base[:0], r.init...)
	for i := range r.base {
		if x := &r.base[i]; !x.held {
			x.end = x.endFrom(r.now)
		}
	}
	r.at = append(r.at[:0], r.base...)
	r.ends, r.by = r.ends[:0], r.by[:0]
}

// rates gives the coupled gang's ranks the rates their runs kept, and
// primes it.
func (r *gangRun) rates(sides []sideBySide) {
	for i := range r.init {
		switch x := &r.init[i]; {
		case x.segs == nil:
		case x.own:
			x.segs = sides[x.side].lanes[x.lane].segs
		default:
			x.segs = sides[x.side].segs // the GPU's one clock
		}
	}
	r.prime()
}

// gangBounds lowers limit to where the gangs out of step (coupled ones, or
// the others) bound the stretch: a gang not stretched, at its first rank's
// end; a candidate, at its last iteration's end, and a checked one where the
// core says no (only a coupled one here: the others are probed with every
// checked job).
func (e *engine) gangBounds(cands []stretchCand, limit time.Duration, coupled bool) time.Duration {
	for _, r := range e.gangs {
		if r.coupled != coupled {
			continue
		}
		if coupled {
			r.rates(e.sides)
		}
		if !r.live {
			limit = min(limit, r.firstEnd()) // not stretched: its ranks' ends are events
		}
	}
	for i := range cands {
		c := &cands[i]
		if c.gang == nil || c.gang.coupled != coupled {
			continue
		}
		c.ok = c.gang.last
		limit = c.gang.endWithin(c.ok, limit) // its last iteration's end changes the shares
		if coupled && c.checked {
			limit = e.probe(c, limit)
		}
	}
	return limit
}

// step ends the iteration the ranks st run (d, of the job's iterations) and
// starts the next, of standalone time left: it returns when the iteration
// ends and the GPU whose part ends it.
func step(st []gangRank, left time.Duration) (time.Duration, int) {
	t, by := time.Duration(-1), -1
	for i := range st {
		if x := &st[i]; !x.held && (x.end > t || x.end == t && x.gi > by) {
			t, by = x.end, x.gi
		}
	}
	for i := range st {
		x := &st[i]
		switch {
		case !x.held && x.end == t: // GPU.Start chains it
			x.f = x.f.add(int64(left))
		case x.own:
			x.c, x.f = clock{t0: t, share: x.rateAt(t)}, vtime{i: int64(left)}
		default:
			x.f = x.clockAt(t).vAt(t).add(int64(left))
		}
		x.held = false
		x.end = x.endFrom(t)
	}
	return t, by
}

// timeTo times the gang's iterations until the k-th end from the stretch's
// start is known, or one ends at bound or later.
func (r *gangRun) timeTo(k int, bound time.Duration) {
	for len(r.ends) <= k && (len(r.ends) == 0 || r.ends[len(r.ends)-1] < bound) {
		n := len(r.ends)
		t, by := step(r.at, r.j.iteration(r.j.done+n+1))
		r.ends, r.by = append(r.ends, t), append(r.by, by)
	}
}

// endOf is when iteration j.done+k ends.
func (r *gangRun) endOf(k int) time.Duration {
	r.timeTo(k, maxTime)
	return r.ends[k]
}

// endWithin is endOf(k) where that is before bound, bound otherwise.
func (r *gangRun) endWithin(k int, bound time.Duration) time.Duration {
	r.timeTo(k, bound)
	if k < len(r.ends) && r.ends[k] < bound {
		return r.ends[k]
	}
	return bound
}

// before is how many of the next n boundaries come before limit.
func (r *gangRun) before(limit time.Duration, n int) int {
	if n <= 0 {
		return 0
	}
	r.timeTo(n-1, limit)
	m := 0
	for m < n && m < len(r.ends) && r.ends[m] < limit {
		m++
	}
	return m
}

// firstEnd is the first instant a rank's part ends, from the stretch's start.
func (r *gangRun) firstEnd() time.Duration {
	t := maxTime
	for _, x := range r.base {
		if !x.held {
			t = min(t, x.end)
		}
	}
	return t
}

// ranksAfter is the ranks as iteration j.done+m runs, m boundaries on.
func (r *gangRun) ranksAfter(m int) []gangRank {
	r.took = append(r.took[:0], r.base...)
	for k := range m {
		step(r.took, r.j.iteration(r.j.done+k+1))
	}
	return r.took
}

// takeGang carries out c, a gang out of step: its c.m boundaries (none,
// where only parts end before limit), then the parts of the iteration in
// flight that end before limit, each rank a hold from its end.
func (e *engine) takeGang(c *stretchCand, limit time.Duration) error {
	r := c.gang
	j := r.j
	r.taken = true
	st := r.ranksAfter(c.m)
	if c.m > 0 {
		if err := e.continued(j, c, j.works[0].Lane); err != nil {
			return err
		}
		e.forwarded.gangIterations += c.m
		if r.coupled {
			e.forwarded.gangBeside += c.m
		}
		left := j.iteration(j.done)
		for i := range j.works {
			g, w, h := j.rankGPUs[i], &j.works[i], &j.holds[i]
			w.Left, w.finish = left, st[i].f
			if st[i].own {
				w.own = st[i].c
			}
			if h.held && h.gpu == g {
				g.Release(h)
				g.enter(w)
			}
			g.seq++
			w.seq = g.seq
		}
		j.parts = len(j.works)
	}
	for i := range j.works {
		x := &st[i]
		g, w, h := j.rankGPUs[i], &j.works[i], &j.holds[i]
		if x.held || !w.working {
			continue
		}
		if x.end >= limit {
			x.runOn(w, limit)
			continue
		}
		// Its part ends before limit: it holds its GPU from then, as partEnded has it.
		heap.Remove(&g.works, w.index)
		g.leave(w)
		w.endedAt = x.end
		h.Job, h.Lane, h.Demand, h.job, h.Model = w.Job, w.Lane, w.Demand, j, w.Model
		g.Hold(h)
		j.parts--
	}
	if j.parts == 0 {
		return fmt.Errorf("job %s: every part of iteration %d ends before %ss, where a stretch stops", j.spec.ID, j.done, seconds(limit))
	}
	return nil
}

// candEnd is when candidate c's k-th next boundary comes: its job's
// iteration j.done+k ends.
func (e *engine) candEnd(c *stretchCand, k int) time.Duration {
	if c.gang != nil {
		return c.gang.endOf(k)
	}
	return c.w.job.endOf(e.gpus[c.g], c.w, k)
}

// candBefore is how many of candidate c's next n boundaries come before limit.
func (e *engine) candBefore(c *stretchCand, limit time.Duration, n int) int {
	if c.gang != nil {
		return c.gang.before(limit, n)
	}
	return c.w.job.boundariesBefore(e.gpus[c.g], c.w, limit, n)
}

// gangTaken sets c, a gang out of step, to take its boundaries before limit
// (at most c.ok), its last ordered among the others' by the part that ends
// it; and says whether the stretch changes it at all (a boundary, or a part
// that ends before limit).
func (c *stretchCand) gangTaken(limit time.Duration) bool {
	r := c.gang
	c.m = r.before(limit, c.ok)
	if c.m == 0 {
		c.last, c.prev = -1, -1
		return r.firstEnd() < limit
	}
	c.last, c.prev = r.ends[c.m-1], -1
	if c.m > 1 {
		c.prev = r.ends[c.m-2]
	}
	c.g = r.by[c.m-1]
	for i, gi := range r.j.ranks {
		if gi == c.g {
			c.w = &r.j.works[i]
		}
	}
	return true
}

// runOn sets the clock of w, the rank's part, which runs past limit, as
// re-based at every change of its rate before limit.
func (x *gangRank) runOn(w *Work, limit time.Duration) {
	if !x.own {
		return
	}
	for x.k+1 < len(x.segs) && x.segs[x.k+1].t0 < limit {
		x.k++
		x.next()
	}
	w.own = x.c
}

// rebase sets the clocks of the ranks of the coupled gangs the stretch did
// not take (none of their parts ends before limit), as their rates changed.
func (e *engine) rebase(limit time.Duration) {
	for _, r := range e.gangs {
		if !r.coupled || r.taken {
			continue
		}
		for i := range r.base {
			if x := &r.base[i]; !x.held {
				x.runOn(&r.j.works[i], limit)
			}
		}
	}
}
