package sim

import (
	"fmt"
	"time"
)

// Lanes side by side. Where the lanes of one GPU take turns beside each other
// and their demands together pass 1 (pack's lanes), each turn that starts a
// job of another demand changes the GPU's share, and with it when every other
// lane's iteration ends: no closed form says where the turns fall. A stretch
// then runs that GPU's clock itself, boundary by boundary, as the
// iteration-by-iteration engine would (the same virtual clock, re-based at
// the same instants, the same rounding), but with none of the core, the heaps
// or the log: each boundary is a few float operations per lane. The core
// foresees who goes next in each lane (core.Turns.NextTurn: its order does not
// depend on when the turns end), and takes the turns at once (Turns.Take), as
// it does for the turns at a share of 1.

// sideBySide is a GPU whose lanes a stretch runs boundary by boundary.
type sideBySide struct {
	g     *GPU
	lanes []sbsLane
	// The last run: its limit, and whether it stopped before it, at stop, where
	// a job's first or last iteration starts or its last ends (each an event).
	ranTo time.Duration
	stop  time.Duration
	final bool
	// The GPU's clock and demands where the run stopped.
	clock clock
	sum   int64
}

// sbsLane is a lane of a sideBySide: its candidate and where its run stands.
type sbsLane struct {
	w  *Work     // the work running in the lane when the stretch began
	c  int       // its candidate, an index of the stretch's cands; -1: ending
	tc *turnCand // its turns; nil: its job goes on alone (or ends)
	// The iteration in flight: its job, index, virtual finish, demand, end, and
	// where the job's iterations so far end alone (j.at(d+1)).
	j      *job
	d      int
	cur    int  // tc: the job's index in tc.jobs
	first  bool // tc: it is the running job's iteration, no turn of the plan
	finish vtime
	demand int64
	end    time.Duration
	done   time.Duration
	next   int // tc: whose turn starts at the lane's next boundary
	taken  int // tc: the turns started (tc.counts: each job's)
	// stop: the lane's next boundary stops the run, before it: the iteration in
	// flight is its job's last (ending), or the next is a job's first.
	stop   bool
	ending bool
	m      int // the boundaries taken
	last   time.Duration
	prev   time.Duration
}

// valid says whether the last run holds for limit: it ran to it, or stopped
// before it where it would stop again.
func (s *sideBySide) valid(limit time.Duration) bool {
	return s.ranTo == limit || s.final && s.stop <= limit && limit <= s.ranTo
}

// run takes every boundary of the GPU's lanes before limit and returns where
// it stopped: limit, or the instant a job's first or last iteration would
// start, or its last ends.
func (s *sideBySide) run(limit time.Duration) time.Duration {
	if s.valid(limit) {
		return s.stop
	}
	g := s.g
	s.clock, s.sum, s.ranTo, s.stop, s.final = g.clock, g.sum, limit, limit, false
	for i := range s.lanes {
		l := &s.lanes[i]
		w := l.w
		l.j, l.d, l.finish, l.demand = w.job, w.job.done, w.finish, fixed(w.Demand)
		l.done = l.j.at(l.d + 1)
		l.end = s.clock.endAfter(l.finish, g.now)
		l.m, l.last, l.prev, l.ending = 0, -1, -1, l.c < 0
		if tc := l.tc; tc != nil {
			l.cur, l.first, l.taken = 0, true, 0
			clear(tc.counts)
			tc.done = tc.done[:0]
			for _, x := range tc.jobs {
				tc.done = append(tc.done, x.at)
			}
			tc.t.Begin(l.j.iteration(l.j.done))
			l.next = tc.t.NextTurn(&tc.jobs, tc.counts, 0)
		}
		l.stop = l.ending || l.tc != nil && l.tc.jobs[l.next].fresh
	}
	// The clock in a local: the loop is the cost of pack's stretches.
	c, lanes := s.clock, s.lanes
	defer func() { s.clock = c }()
	for {
		at := lanes[0].end
		for i := 1; i < len(lanes); i++ {
			at = min(at, lanes[i].end)
		}
		if at >= limit {
			return limit
		}
		// Whose iteration starts at each boundary now: none may be a job's
		// first, nor may a job end, or the run stops before the instant.
		for i := range lanes {
			if l := &lanes[i]; l.end == at && l.stop {
				s.stop, s.final = at, true
				return at
			}
		}
		now := instant{at: at}
		changed := false
		for i := range lanes {
			if l := &lanes[i]; l.end == at {
				changed = s.boundary(l, &c, &now) || changed
			}
		}
		if changed {
			vnow := now.v
			if sh := g.shareOf(g.n, s.sum); sh != c.share {
				c = clock{t0: at, v0: vnow, share: sh}
				for i := range lanes {
					l := &lanes[i]
					l.end = c.endAfter(l.finish, at)
				}
				continue
			}
		}
		for i := range lanes {
			if l := &lanes[i]; l.last == at {
				l.end = c.endAfter(l.finish, at)
			}
		}
	}
}

// instant is the instant of boundaries a run takes, and the GPU's clock then
// once a boundary needs it (v, when ok).
type instant struct {
	at time.Duration
	v  vtime
	ok bool
}

// boundary takes l's boundary now, on the GPU's clock c: its iteration ends
// and the next starts, its job's own next (continuing from its finish, as
// GPU.Start chains it) or another's (from the clock). It says whether the
// lane's demand changed.
func (s *sideBySide) boundary(l *sbsLane, c *clock, now *instant) bool {
	l.m++
	l.prev, l.last = l.last, now.at
	tc := l.tc
	if tc == nil {
		l.d++
		next := l.j.at(l.d + 1)
		l.finish = l.finish.add(int64(next - l.done))
		l.done = next
		l.ending = l.d == l.j.spec.Iterations-1
		l.stop = l.ending
		return false
	}
	l.first = false
	i := l.next
	x := &tc.jobs[i]
	d := x.d + tc.counts[i]
	tc.counts[i]++
	l.taken++
	done := x.atN(d + 1)
	left := int64(done - tc.done[i])
	tc.done[i] = done
	l.ending = d == x.last
	// Whose turn follows this one, once it ends.
	l.next = tc.t.NextTurn(&tc.jobs, tc.counts, l.taken)
	l.stop = l.ending || tc.jobs[l.next].fresh
	changed := false
	if i == l.cur {
		l.finish = l.finish.add(left)
	} else {
		if !now.ok {
			now.v, now.ok = c.vAt(now.at), true
		}
		l.finish = now.v.add(left)
		changed = x.demand != l.demand
		s.sum += x.demand - l.demand
		l.demand = x.demand
	}
	l.cur, l.j, l.d = i, x.j, d
	return changed
}

// result writes the run's boundaries into the lanes' candidates.
func (s *sideBySide) result(cands []stretchCand) {
	for i := range s.lanes {
		l := &s.lanes[i]
		if l.c < 0 {
			continue
		}
		c := &cands[l.c]
		c.m, c.last, c.prev = l.m, l.last, l.prev
		if tc := l.tc; tc != nil {
			tc.next, tc.finish = -1, l.finish
			if l.m > 0 {
				tc.next = l.cur
				tc.counts[l.cur]-- // its turn runs: counts are the turns that ended
			}
		}
	}
}

// sideBySideOK says whether a stretch may run a GPU's lanes boundary by
// boundary: their jobs' turns may be taken, and nothing delays a turn.
func (e *engine) sideBySideOK() bool {
	return e.turnsOK && e.switchCost == 0 && !e.o.Policy.Swapped
}

// needsSide says whether the lanes of g, cands, need a sideBySide: some take
// turns that Plan cannot time, the share of 1 not held whichever job runs.
func (e *engine) needsSide(g *GPU, cands []stretchCand) bool {
	for i := range cands {
		if tc := cands[i].turns; tc != nil && !tc.atOne {
			return true
		}
	}
	return turnsPassOne(g, cands)
}

// turnsPassOne says whether the lanes of g, cands, that take turns (two or
// more) could together pass a share of 1, each at its highest demand.
func turnsPassOne(g *GPU, cands []stretchCand) bool {
	sum, lanes := g.sum, 0
	for i := range cands {
		if tc := cands[i].turns; tc != nil {
			sum += tc.maxDemand - fixed(cands[i].w.Demand)
			lanes++
		}
	}
	return lanes >= 2 && g.shareOf(g.n, sum) != 1
}

// sideOf adds to sides the GPU g whose lanes are cands[from:] and those
// whose job's last iteration runs, ending.
func (e *engine) sideOf(sides []sideBySide, g *GPU, cands []stretchCand, from int, ending []*Work) []sideBySide {
	if len(sides) == cap(sides) {
		sides = append(sides, sideBySide{})
	} else {
		sides = sides[:len(sides)+1]
	}
	s := &sides[len(sides)-1]
	s.g, s.ranTo, s.final = g, -1, false
	s.lanes = s.lanes[:0]
	for i := from; i < len(cands); i++ {
		cands[i].side = true
		s.lanes = append(s.lanes, sbsLane{w: cands[i].w, c: i, tc: cands[i].turns})
	}
	for _, w := range ending {
		s.lanes = append(s.lanes, sbsLane{w: w, c: -1})
	}
	return sides
}

// runSides runs every sideBySide up to limit and returns the limit lowered
// to where one stopped (a job's last iteration starts there); a lower limit
// plans the other turns and runs the others again.
func (e *engine) runSides(cands []stretchCand, sides []sideBySide, limit time.Duration) time.Duration {
	for len(sides) > 0 {
		low := limit
		for i := range sides {
			low = min(low, sides[i].run(limit))
		}
		if low == limit {
			break
		}
		limit = e.planTurns(cands, low)
	}
	for i := range sides {
		sides[i].result(cands)
	}
	return limit
}

// commit sets the GPU's clock where the run stopped, once its lanes' turns
// and boundaries are taken.
func (s *sideBySide) commit() error {
	g := s.g
	if g.sum != s.sum {
		return fmt.Errorf("internal error: the lanes side by side on a GPU ended with demands %d, the GPU's are %d", s.sum, g.sum)
	}
	g.clock, g.dirty = s.clock, false
	return nil
}
