package sim

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/interference"
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
//
// Only the lanes that take turns are run so. A lane whose job goes on alone
// (or runs its last iteration) changes neither the share nor, since its
// iterations follow each other from their virtual finish, its own ends'
// virtual times: it is passive. Its boundaries are counted once, at the
// run's end, from the clock's segments (the clock after each re-base): each
// is taken at the instant the clock in force then gives it. The run heeds
// only where the first of them stops it (the passive lanes' least stop).

// Under a co-location model (GPU.SetInterference) each lane's work runs on a
// clock of its own (GPU.clockOf), at the rate the jobs beside it leave it: a
// turn that changes a lane's job changes every lane's rate. The run then
// keeps each lane's clock (own), finds the lane that ends first by the ends
// themselves, and at a change of jobs re-bases every clock as
// GPU.settleEach would. A passive lane keeps the segments of its own clock,
// as the GPU's one clock's are kept otherwise, and its boundaries are
// counted from them at the run's end.

// sideBySide is a GPU whose lanes a stretch runs boundary by boundary.
type sideBySide struct {
	g *GPU
	// own: the GPU runs under a co-location model, each lane on its clock.
	own      bool
	ran      *int // the engine's count of the boundaries run (forwarded.sideRun)
	switches *int // and of those where a lane went on with another job (forwarded.switches)
	twos     *int // the runs of two lanes that both take turns (forwarded.twoLanes)
	// waits: the turns' starts and waits are kept (turnCand.starts, ends).
	waits bool
	// lanes: those that take turns, lanes[:act], then the passive ones.
	lanes []sbsLane
	act   int
	fin   []vtime // lanes[:act]'s finishes, together for peek's scan
	// stopF is the least virtual finish where a passive lane stops the run
	// (its job's last iteration ends there), or never; segs is the clock
	// from the run's start and after each re-base (the last is s.clock),
	// kept only while there are passive lanes.
	stopF vtime
	segs  []clock
	saved sideSave // the run at its epoch's start (runTogether)
	// full: a rank lane's segments (or, under today's rule, the clock's where
	// there are rank lanes) reached maxSegs: the run stops at its next
	// instant (a gang's rates are kept whole, not caught up).
	full, ranks bool
	// The last run: its limit, and whether it stopped before it, at stop, where
	// a job's first or last iteration starts or its last ends (each an event).
	ranTo time.Duration
	stop  time.Duration
	final bool
	// The GPU's clock and demands where the run stands.
	clock clock
	sum   int64
	// The run in progress: the instant it took last (at first the GPU's now),
	// its next instant, the least virtual finish of its lanes, which ends
	// then, and the lanes that end then (ends).
	cur    time.Duration
	next   time.Duration
	least  vtime
	ending []int
	alone  int // the one lane that ends then (act: the passive stop), or -1: maybe several
}

// never is a virtual time no lane reaches.
var never = vtime{i: math.MaxInt64}

// maxSegs bounds a run's segments: past it, the passive lanes are caught up
// and the list starts again from the clock in force (at a run's start, or an
// epoch's).
var maxSegs = 1 << 12 // a var: tests cut it short

// sbsLane is a lane of a sideBySide: its candidate and where its run stands.
type sbsLane struct {
	w  *Work     // the work running in the lane when the stretch began
	c  int       // its candidate, an index of the stretch's cands; -1: ending
	tc *turnCand // its turns; nil: passive, its job goes on alone (or ends)
	// The iteration in flight: its job, index, virtual finish, demand, and
	// where the job's iterations so far end alone (j.at(d+1)); under a
	// co-location model (own), its clock and its job's row in the model.
	clk   clock
	unit  int
	press int64         // the fixed-point sum of its terms from the other lanes
	rated int64         // the press its clock\'s share was last set from
	end   time.Duration // when its iteration in flight ends on clk (peek)
	stale bool          // its end is to be timed again: its finish or clock changed
	// A passive lane's, under a co-location model: its clock's segments from
	// the run's start (the last is clk), and the virtual finish where its job
	// ends (stopF), which stops the run.
	segs   []clock
	stopF  vtime
	j      *job
	d      int
	cur    int  // tc: the job's index in tc.jobs
	first  bool // tc: it is the running job's iteration, no turn of the plan
	finish vtime
	demand int64
	done   time.Duration
	next   int  // tc: whose turn starts at the lane's next boundary
	taken  int  // tc: the turns started (tc.counts: each job's)
	rr     bool // tc: the turns go round (Turns.RoundRobin): next follows the last
	// rank: the lane is a rank of a gang out of step (gangs.go), or its hold:
	// the run keeps its rates (clk, from its press) and their changes (segs),
	// and takes no boundary of it.
	rank bool
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

// begin starts a run from the GPU as it is, to limit at most.
func (s *sideBySide) begin(limit time.Duration) {
	g := s.g
	s.clock, s.sum, s.ranTo, s.stop, s.final, s.cur = g.clock, g.sum, limit, limit, false, g.now
	s.segs = append(s.segs[:0], s.clock)
	s.saved.segs = -1
	s.stopF = never
	s.full = false
	s.fin = s.fin[:0]
	if s.own {
		for i := range s.lanes {
			s.lanes[i].unit = s.lanes[i].w.unit
		}
		for i := range s.lanes {
			l := &s.lanes[i]
			l.press = 0
			for k := range s.lanes {
				if k != i {
					l.press += g.im.FixedTerm(l.unit, s.lanes[k].unit)
				}
			}
			l.rated = l.press // its clock's share is this sum's (GPU.settleEach)
		}
	}
	for i := range s.lanes {
		l := &s.lanes[i]
		w := l.w
		if l.rank {
			// Its clock reads nothing: its rate from now, re-based where it changes.
			l.clk, l.stale, l.stopF, l.ending = clock{t0: g.now, share: interference.SlowdownOf(l.press)}, true, never, false
			l.segs = append(l.segs[:0], l.clk)
			continue
		}
		l.j, l.d, l.finish, l.demand = w.job, w.job.done, w.finish, fixed(w.Demand)
		l.done = l.j.at(l.d + 1)
		l.m, l.last, l.prev, l.ending = 0, -1, -1, l.c < 0
		if s.own {
			l.clk, l.stale = w.own, true
		}
		if i >= s.act && s.own {
			l.segs = append(l.segs[:0], l.clk)
			l.stopF = l.finish // an ending lane's: its iteration in flight is the last
			if !l.ending {
				l.stopF = l.finish.add(int64(l.j.at(l.j.spec.Iterations) - l.done))
			}
			continue
		}
		if i >= s.act {
			stop := l.finish // an ending lane's: its iteration in flight is the last
			if !l.ending {
				stop = l.finish.add(int64(l.j.at(l.j.spec.Iterations) - l.done))
			}
			if stop.less(s.stopF) {
				s.stopF = stop
			}
			continue
		}
		tc := l.tc // the lane takes turns
		l.cur, l.first, l.taken = 0, true, 0
		clear(tc.counts)
		tc.done = tc.done[:0]
		for _, x := range tc.jobs {
			tc.done = append(tc.done, x.at)
		}
		if s.waits {
			tc.starts, tc.ends = tc.starts[:0], tc.ends[:0]
			for _, x := range tc.jobs {
				tc.ends = append(tc.ends, x.j.requestedAt) // the running job's is set as its iteration ends
			}
		}
		tc.t.Begin(l.j.iteration(l.j.done))
		l.rr = tc.t.RoundRobin()
		l.next = tc.t.NextTurn(&tc.jobs, tc.counts, 0)
		l.stop = tc.jobs[l.next].fresh
		s.fin = append(s.fin, l.finish)
	}
	s.peek()
}

// peek finds the run's next instant. Every lane runs on the GPU's one clock,
// so the lane of least virtual finish ends first: a change of share moves
// every end, but not their order, and only the first is timed. Under a
// co-location model each lane's end is timed on its own clock.
func (s *sideBySide) peek() {
	if s.own {
		s.peekOwn()
		return
	}
	// The least finish (act: the passive stop), and the next integer part.
	least, f, second := s.act, s.stopF, int64(math.MaxInt64)
	for i, g := range s.fin {
		if g.less(f) {
			second = min(second, f.i)
			least, f = i, g
		} else {
			second = min(second, g.i)
		}
	}
	s.least, s.next = f, s.clock.endAfter(f, s.cur)
	s.alone = -1
	if second > f.i+1 {
		s.alone = least // no other lane can end at the same nanosecond
	}
}

// peekOwn is peek under a co-location model: the least of the lanes' ends,
// each on its clock (act: a passive lane's stop, where its job ends), timed
// again only where a lane's finish or clock changed.
func (s *sideBySide) peekOwn() {
	s.next, s.alone = time.Duration(math.MaxInt64), -1
	n := 0
	for i := range s.lanes {
		l := &s.lanes[i]
		if l.stale {
			f := l.finish
			if i >= s.act {
				f = l.stopF
			}
			l.end, l.stale = l.clk.endAfter(f, s.cur), false
		}
		k := i
		if i >= s.act {
			k = s.act
		}
		switch {
		case l.end < s.next:
			s.next, s.alone, n = l.end, k, 1
		case l.end == s.next:
			n++
		}
	}
	if n > 1 {
		s.alone = -1
	}
}

// ends finds the lanes whose iterations end at the next instant, and says
// whether one of them, or the passive lanes' stop, stops the run there.
func (s *sideBySide) ends() (stops bool) {
	s.ending = s.ending[:0]
	if s.own {
		if s.alone == s.act {
			return true // a passive lane's job ends
		}
		for i := range s.lanes {
			l := &s.lanes[i]
			if l.end != s.next {
				continue
			}
			if i >= s.act {
				stops = true
				continue
			}
			s.ending = append(s.ending, i)
			stops = stops || l.stop
		}
		return stops
	}
	if i := s.alone; i >= 0 {
		if i == s.act {
			return true
		}
		s.ending = append(s.ending, i)
		return s.lanes[i].stop
	}
	for i := range s.lanes[:s.act] {
		if l := &s.lanes[i]; s.endsNext(l.finish) {
			s.ending = append(s.ending, i)
			stops = stops || l.stop
		}
	}
	return stops || s.endsNext(s.stopF)
}

// endsNext says whether a work of virtual finish f ends at the run's next
// instant. A finish a nanosecond or more past the least ends a nanosecond
// later at least (the share is 1 or more).
func (s *sideBySide) endsNext(f vtime) bool {
	return f.i <= s.least.i+1 && s.clock.endAfter(f, s.cur) == s.next
}

// take takes the boundaries of the next instant (ends found them), re-bases
// the clock where the share changed, and peeks at the instant after.
func (s *sideBySide) take() {
	if s.own {
		s.takeOwn()
		return
	}
	at := s.next
	now := instant{at: at}
	changed := false
	for _, i := range s.ending {
		changed = s.boundary(i, &s.clock, &now) || changed
	}
	if changed {
		if s.clock.reRate(at, s.g.shareOf(s.g.n, s.sum)) { // as GPU.settle re-bases it
			if s.act < len(s.lanes) { // only the passive lanes read the segments
				s.segs = append(s.segs, s.clock)
				switch {
				case len(s.segs) < maxSegs:
				case s.ranks:
					s.full = true // a gang's ranks read them all
				case s.saved.segs < 0:
					s.catchUp(at + 1) // no epoch's save to honour (in one, save does)
				}
			}
		}
	}
	s.cur = at
	s.peek()
}

// takeOwn is take under a co-location model: the lanes that end now take
// their boundaries, each on its clock; where a lane's job changed, every other
// lane's pressure changes by the two jobs' terms, and each clock whose
// slowdown changed is re-based now (clock.reRate), as GPU.settleEach would
// find it: the sums are of fixed-point terms, exact in any order.
func (s *sideBySide) takeOwn() {
	at := s.next
	changed := false
	for _, i := range s.ending {
		l := &s.lanes[i] // a lane that takes turns: the passive ones stop the run instead
		l.stale = true
		was := l.unit
		now := instant{at: at}
		if !s.boundary(i, &l.clk, &now) {
			continue
		}
		changed = true
		if l.unit == was {
			continue // another job of the same row: the same terms, every press as it was
		}
		im := s.g.im
		l.press = 0
		for k := range s.lanes {
			if k == i {
				continue
			}
			o := &s.lanes[k]
			o.press += im.FixedTerm(o.unit, l.unit) - im.FixedTerm(o.unit, was)
			l.press += im.FixedTerm(l.unit, o.unit)
		}
	}
	if changed {
		for i := range s.lanes {
			l := &s.lanes[i]
			if l.press == l.rated {
				continue // the same sum, the same share
			}
			l.rated = l.press
			if !l.clk.reRate(at, interference.SlowdownOf(l.press)) {
				continue
			}
			l.stale = true
			if i >= s.act {
				s.keepSeg(l, at)
			}
		}
	}
	s.cur = at
	s.peek()
}

// advance takes every instant before bound, and says whether the run stopped
// before one (a stop: s.next is where).
func (s *sideBySide) advance(bound time.Duration) (stopped bool) {
	if s.own {
		if len(s.lanes) == 2 && s.act == 2 && twoLaneLoop {
			*s.twos++
			return s.advanceTwo(bound)
		}
		return s.advanceOwn(bound)
	}
	for s.next < bound {
		if s.full || s.ends() {
			return true
		}
		s.take()
	}
	return false
}

// runTogether runs the GPUs' sides up to limit, so that none runs past the
// first instant where one stops (a run's boundaries past it would be thrown
// away), and returns that instant, or limit. A GPU whose last run holds for
// limit is not run again.
func (e *engine) runTogether(sides []sideBySide, limit time.Duration) time.Duration {
	low := limit
	run := e.sideRun[:0]
	for i := range sides {
		if s := &sides[i]; s.valid(limit) {
			low = min(low, s.stop)
		} else {
			run = append(run, s)
		}
	}
	e.sideRun = run
	for _, s := range run {
		s.begin(low)
	}
	var stopped *sideBySide
	switch {
	case len(run) == 1:
		if run[0].advance(low) {
			stopped = run[0]
		}
	case len(run) > 1:
		stopped = e.epochs(run, low)
	}
	if stopped != nil {
		low = stopped.next
		stopped.stop, stopped.final = low, true
	}
	for _, s := range run {
		if s != stopped && s.ranTo > low {
			s.ranTo, s.stop = low, low // it took every instant before low
		}
	}
	return low
}

// epochBoundaries is about how many boundaries a GPU runs in an epoch.
const epochBoundaries = 128

// epochs runs several GPUs' sides up to low, epoch by epoch, and returns the
// one that stopped first, if one did. In an epoch each GPU runs apart, up to
// the epoch's end or the first instant where one stopped, the earlier GPUs'
// included: where one stops, the GPUs that took that instant or later are put
// back to the epoch's start and run again up to it. No GPU takes the instant
// where one stops, the others' boundaries then included. An epoch's length
// follows the boundaries the last one ran (e.epochSpan).
func (e *engine) epochs(run []*sideBySide, low time.Duration) *sideBySide {
	from := nextOf(run, low)
	span := max(e.epochSpan, 1)
	for from < low {
		end := low
		if span < low-from {
			end = from + span
		}
		ran := e.forwarded.sideRun
		var stopped *sideBySide
		for _, s := range run {
			s.save()
			if s.advance(end) {
				stopped, end = s, s.next
			}
		}
		if stopped != nil {
			for _, s := range run {
				if s != stopped && s.cur >= end {
					s.restore()
					s.advance(end) // it does not stop before: end is past where it ran
				}
			}
			return stopped
		}
		// Aim at epochBoundaries a GPU, moving by a factor of 8 at most.
		n, want := e.forwarded.sideRun-ran, epochBoundaries*len(run)
		switch {
		case n*8 <= want:
			span *= 8
		case n >= want*8:
			span /= 8
		default:
			span = time.Duration(float64(span) * float64(want) / float64(n))
		}
		span = min(max(span, 1), time.Duration(math.MaxInt64/4))
		e.epochSpan = span
		from = nextOf(run, low)
	}
	return nil
}

// nextOf is the least next instant of the GPUs of run, or low.
func nextOf(run []*sideBySide, low time.Duration) time.Duration {
	for _, s := range run {
		low = min(low, s.next)
	}
	return low
}

// sideSave is a sideBySide's run as it stood at an epoch's start: what the
// lanes that take turns change as they run (the passive lanes are caught up
// only between epochs).
type sideSave struct {
	clock  clock
	sum    int64
	cur    time.Duration
	next   time.Duration
	least  vtime
	alone  int
	segs   int // -1: none kept
	full   bool
	lanes  []sbsLane
	counts []int
	done   []time.Duration
	// with waits: each lane's starts kept so far, and its jobs' last ends
	starts []int
	ends   []time.Duration
}

// save keeps the run as it stands, to restore it; the passive lanes are
// caught up first when the segments grew long.
func (s *sideBySide) save() {
	if len(s.segs) >= maxSegs && !s.ranks {
		s.catchUp(s.cur + 1) // every instant to cur is taken
	}
	if s.own {
		for i := s.act; i < len(s.lanes); i++ {
			if l := &s.lanes[i]; len(l.segs) >= maxSegs && !l.rank {
				l.catchUp(s.cur + 1)
			}
		}
	}
	v := &s.saved
	v.clock, v.sum, v.cur, v.next, v.least, v.alone, v.segs, v.full = s.clock, s.sum, s.cur, s.next, s.least, s.alone, len(s.segs), s.full
	n := s.act
	if s.own {
		n = len(s.lanes) // the passive lanes run too
	}
	v.lanes = append(v.lanes[:0], s.lanes[:n]...)
	v.counts, v.done, v.starts, v.ends = v.counts[:0], v.done[:0], v.starts[:0], v.ends[:0]
	for i := range s.lanes[:s.act] {
		tc := s.lanes[i].tc
		v.counts = append(v.counts, tc.counts...)
		v.done = append(v.done, tc.done...)
		if s.waits {
			v.starts = append(v.starts, len(tc.starts))
			v.ends = append(v.ends, tc.ends...)
		}
	}
}

// restore puts the run back as save kept it.
func (s *sideBySide) restore() {
	v := &s.saved
	s.clock, s.sum, s.cur, s.next, s.least, s.alone, s.segs, s.full = v.clock, v.sum, v.cur, v.next, v.least, v.alone, s.segs[:v.segs], v.full
	copy(s.lanes, v.lanes)
	counts, done, ends := v.counts, v.done, v.ends
	for i := range s.lanes[:s.act] {
		s.fin[i] = s.lanes[i].finish
		tc := s.lanes[i].tc
		counts = counts[copy(tc.counts, counts):]
		done = done[copy(tc.done, done):]
		if s.waits {
			tc.starts = tc.starts[:v.starts[i]]
			ends = ends[copy(tc.ends, ends):]
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

// turn takes lane l's boundary at at in its turns (l takes turns): its
// iteration ends and the next starts, its job's own next or another's. It
// returns the turn's job and its standalone time, and leaves l.cur, the job
// whose iteration ended, for the caller to compare.
func (s *sideBySide) turn(l *sbsLane, at time.Duration) (i int, x *turnJob, left int64) {
	*s.ran++
	l.m++
	l.prev, l.last = l.last, at
	tc := l.tc
	l.first = false
	i = l.next
	x = &tc.jobs[i]
	d := x.d + tc.counts[i]
	tc.counts[i]++
	l.taken++
	if s.waits {
		tc.ends[l.cur] = at // the iteration that ended
		tc.starts = append(tc.starts, turnStart{i: i, s: eventlog.WaitS(tc.ends[i].Seconds(), at.Seconds())})
	}
	done := x.atN(d + 1)
	left = int64(done - tc.done[i])
	tc.done[i] = done
	l.ending = d == x.last
	// Whose turn follows this one, once it ends.
	if l.rr {
		if l.next++; l.next == len(tc.jobs) {
			l.next = 0
		}
	} else {
		l.next = tc.t.NextTurn(&tc.jobs, tc.counts, l.taken)
	}
	l.stop = l.ending || tc.jobs[l.next].fresh
	if i != l.cur {
		*s.switches++
		s.sum += x.demand - l.demand
		l.demand = x.demand
	}
	l.j, l.d = x.j, d
	return i, x, left
}

// boundary takes lane k's boundary now (turn), on the clock c: its job's own
// next iteration continues from its finish (as GPU.Start chains it), another
// job's starts from the clock. It says whether the lane's job changed (under
// a co-location model) or its demand (under today's rule).
func (s *sideBySide) boundary(k int, c *clock, now *instant) bool {
	l := &s.lanes[k]
	was, demand := l.cur, l.demand
	i, x, left := s.turn(l, now.at)
	l.cur = i
	switch {
	case i == was:
		l.finish = l.finish.add(left)
		s.fin[k] = l.finish
		return false
	case s.own:
		// Another job's iteration: a clock of its own from now, as GPU.Start
		// gives it, and every lane's rate changes (takeOwn).
		*c, l.finish = clock{t0: now.at, share: 1}, vtime{i: left}
		l.unit = x.unit
		l.rated = math.MinInt64 // a clock at a share of 1: to be rated
		return true
	}
	if !now.ok {
		now.v, now.ok = c.vAt(now.at), true
	}
	l.finish = now.v.add(left)
	s.fin[k] = l.finish
	return x.demand != demand
}

// catchUp counts the passive lanes' boundaries before x, which the run has
// reached, and starts the segments again from the clock in force. A
// boundary's instant comes from the segment in force when the run reached
// it (timeOn); one before x is in an earlier segment, or ends before x on the
// last.
func (s *sideBySide) catchUp(x time.Duration) {
	last := s.segs[len(s.segs)-1]
	for i := s.act; i < len(s.lanes); i++ {
		if !s.lanes[i].rank {
			s.lanes[i].catchUpOn(s.segs, x)
		}
	}
	if s.ranks {
		return // a gang's ranks read them all, where the run stops short of maxSegs
	}
	s.segs = append(s.segs[:0], last)
}

// catchUp is sideBySide.catchUp for one passive lane on its own clock's
// segments (a co-location model's run).
func (l *sbsLane) catchUp(x time.Duration) {
	l.catchUpOn(l.segs, x)
	l.segs = append(l.segs[:0], l.segs[len(l.segs)-1])
}

// catchUpOn counts a passive lane's boundaries before x on the clock whose
// segments are segs (catchUp).
func (l *sbsLane) catchUpOn(segs []clock, x time.Duration) {
	if l.ending {
		return // its one boundary stops the run
	}
	last := segs[len(segs)-1]
	// The boundaries up to the one that starts the job's last iteration.
	m := l.j.endsBefore(&last, last.t0, l.finish, l.d, l.j.spec.Iterations-1-l.d, x)
	if m == 0 {
		return
	}
	if m > 1 {
		l.prev = timeOn(segs, l.finishOf(m-2))
	} else {
		l.prev = l.last
	}
	l.last = timeOn(segs, l.finishOf(m-1))
	l.m += m
	l.d += m
	next := l.j.at(l.d + 1)
	l.finish = l.finish.add(int64(next - l.done))
	l.done = next
}

// finishOf is the virtual finish of a passive lane's k-th next boundary.
func (l *sbsLane) finishOf(k int) vtime { return l.finish.add(int64(l.j.at(l.d+k+1) - l.done)) }

// timeOn is the instant the run took a passive lane's boundary of virtual
// finish f at: the first segment whose clock ends it no later than the next
// segment's start (the re-base is at that instant's take, after the lanes
// that end then), at the least the segment's start. Segments whose end is
// well before f cannot: the search starts past them, with room for the
// rounding of the clock's re-bases.
func timeOn(segs []clock, f vtime) time.Duration {
	from := f.add(-(4 + f.i>>46))
	k, _ := slices.BinarySearchFunc(segs[1:], from, func(c clock, v vtime) int {
		if c.v0.less(v) {
			return -1
		}
		return 1
	})
	for ; k < len(segs)-1; k++ {
		if t := segs[k].endAfter(f, segs[k].t0); t <= segs[k+1].t0 {
			return t
		}
	}
	c := &segs[len(segs)-1]
	return c.endAfter(f, c.t0)
}

// result writes the run's boundaries into the lanes' candidates.
func (s *sideBySide) result(cands []stretchCand) {
	if s.own {
		for i := s.act; i < len(s.lanes); i++ {
			if !s.lanes[i].rank {
				s.lanes[i].catchUp(s.stop) // the run took every instant before its stop
			}
		}
	} else {
		s.catchUp(s.stop) // the run took every instant before its stop
	}
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
// boundary: their jobs' turns may be taken, at any share (no sink takes only
// those at a share of 1), and nothing delays a turn.
func (e *engine) sideBySideOK() bool {
	return e.turnsOK && !e.turnsAtOne && e.switchCost == 0 && !e.o.Policy.Swapped
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
func (e *engine) sideOf(sides []sideBySide, g *GPU, cands []stretchCand, from int, ending, ranks []*Work) []sideBySide {
	if len(sides) == cap(sides) {
		sides = append(sides, sideBySide{})
	} else {
		sides = sides[:len(sides)+1]
	}
	s := &sides[len(sides)-1]
	s.g, s.ranTo, s.final, s.ran, s.waits = g, -1, false, &e.forwarded.sideRun, e.turnWaits
	s.switches, s.twos = &e.forwarded.switches, &e.forwarded.twoLanes
	s.own = g.each
	s.lanes = s.lanes[:0]
	for i := from; i < len(cands); i++ { // the lanes that take turns first
		if cands[i].gang != nil {
			continue // a gang's candidate: its rank here is a rank lane
		}
		cands[i].side = true
		if tc := cands[i].turns; tc != nil {
			s.addLane(sbsLane{w: cands[i].w, c: i, tc: tc})
		}
	}
	s.act = len(s.lanes)
	for i := from; i < len(cands); i++ {
		if cands[i].turns == nil && cands[i].gang == nil {
			s.addLane(sbsLane{w: cands[i].w, c: i})
		}
	}
	for _, w := range ending {
		s.addLane(sbsLane{w: w, c: -1})
	}
	s.ranks = len(ranks) > 0
	for _, w := range ranks {
		w.job.gang.beside(g, len(sides)-1, len(s.lanes))
		s.addLane(sbsLane{w: w, c: -1, rank: true})
	}
	return sides
}

// addLane appends l to s's lanes, reusing the segments' storage of the lane
// that stood there before: a stretch allocates nothing for them.
func (s *sideBySide) addLane(l sbsLane) {
	if n := len(s.lanes); n < cap(s.lanes) {
		l.segs = s.lanes[:n+1][n].segs[:0]
	}
	s.lanes = append(s.lanes, l)
}

// runSides runs every sideBySide up to limit and returns the limit lowered
// to where one stopped (a job's last iteration starts there); a lower limit
// plans the other turns and runs the others again.
func (e *engine) runSides(cands []stretchCand, sides []sideBySide, limit time.Duration) time.Duration {
	for len(sides) > 0 {
		low := e.runTogether(sides, limit)
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
	if s.own {
		// Each lane's work takes the clock its lane ran on: the running job's
		// where the lane took turns.
		for i := range s.lanes {
			l := &s.lanes[i]
			if l.rank {
				continue // the gang's stretch sets its ranks' clocks (takeGang)
			}
			w := l.w
			if l.tc != nil && l.m > 0 {
				w = &l.tc.jobs[l.cur].j.works[0]
			}
			w.own = l.clk
		}
	}
	return nil
}

// advanceOwn is advance under a co-location model. Where one lane alone
// ends at the next instant (the common case), its boundary is taken here:
// where its job changes, it starts on a clock of its own at its slowdown,
// and where the job's row changes, each other lane's pressure changes by
// the two jobs' terms and its clock is re-based at once (no other lane ends
// then, so nothing else is summed first), and only the ends that moved are
// timed again. Several lanes ending at once go through ends and takeOwn.
func (s *sideBySide) advanceOwn(bound time.Duration) bool {
	im := s.g.im
	for s.next < bound {
		if s.full {
			return true // a gang's rates would pass maxSegs: it stops here
		}
		k := s.alone
		if k < 0 {
			if s.tieOwn() {
				return true
			}
			continue
		}
		if k == s.act || s.lanes[k].stop {
			return true // a passive lane's job ends, or k's boundary stops the run
		}
		at := s.next
		l := &s.lanes[k]
		i, x, left := s.turn(l, at)
		if i == l.cur {
			l.finish = l.finish.add(left)
		} else {
			l.cur = i
			l.clk, l.finish = clock{t0: at, share: 1}, vtime{i: left}
			if was := l.unit; x.unit != was {
				l.unit, l.press = x.unit, 0
				for i := range s.lanes {
					if i == k {
						continue
					}
					o := &s.lanes[i]
					o.press += im.FixedTerm(o.unit, l.unit) - im.FixedTerm(o.unit, was)
					l.press += im.FixedTerm(l.unit, o.unit)
					if o.press == o.rated {
						continue
					}
					o.rated = o.press
					if !o.clk.reRate(at, interference.SlowdownOf(o.press)) {
						continue
					}
					if i < s.act {
						o.end = o.clk.endAfter(o.finish, at)
						continue
					}
					o.end = o.clk.endAfter(o.stopF, at) // a passive lane: where its job ends
					s.keepSeg(o, at)
				}
			}
			l.rated = l.press
			l.clk.reRate(at, interference.SlowdownOf(l.press))
		}
		l.end, l.stale = l.clk.endAfter(l.finish, at), false
		s.cur = at
		s.next, s.alone = l.end, k
		n := 1
		for i := range s.lanes {
			if i == k {
				continue
			}
			switch e := s.lanes[i].end; {
			case e < s.next:
				s.next, s.alone, n = e, min(i, s.act), 1
			case e == s.next:
				n++
			}
		}
		if n > 1 {
			s.alone = -1
		}
	}
	return false
}

// twoLaneLoop is whether two lanes that both take turns run advanceTwo; a
// test turns it off to hold the logs to advanceOwn's.
var twoLaneLoop = true

// advanceTwo is advanceOwn for two lanes that both take turns, pack's
// common case: the same steps, with the other lane known (no loop over the
// lanes, whose branches on the lane that switched the CPU cannot foresee).
// It has no passive lane, so no rank's segments to fill (s.full). The
// engines' agreement (FuzzEnginesAgree, TestTwoLanesTakeTheirOwnLoop) holds
// it to the per-iteration engine.
func (s *sideBySide) advanceTwo(bound time.Duration) bool {
	im := s.g.im
	for s.next < bound {
		k := s.alone
		if k < 0 {
			if s.tieOwn() {
				return true
			}
			continue
		}
		l, o := &s.lanes[k], &s.lanes[k^1]
		if l.stop {
			return true
		}
		at := s.next
		i, x, left := s.turn(l, at)
		if i == l.cur {
			l.finish = l.finish.add(left)
		} else {
			l.cur = i
			if x.unit != l.unit {
				// Each lane's press is the other's one term (begin).
				l.unit = x.unit
				o.press, l.press = im.FixedTerm(o.unit, l.unit), im.FixedTerm(l.unit, o.unit)
				if o.press != o.rated {
					o.rated = o.press
					if o.clk.reRate(at, interference.SlowdownOf(o.press)) {
						o.end = o.clk.endAfter(o.finish, at)
					}
				}
			}
			// Another job's iteration: a clock of its own from now at its
			// slowdown, as GPU.Start then settleEach give it.
			l.rated = l.press
			l.clk, l.finish = clock{t0: at, share: interference.SlowdownOf(l.press)}, vtime{i: left}
		}
		l.end, l.stale = l.clk.endAfter(l.finish, at), false
		s.cur = at
		switch {
		case l.end < o.end:
			s.next, s.alone = l.end, k
		case o.end < l.end:
			s.next, s.alone = o.end, k^1
		default:
			s.next, s.alone = l.end, -1
		}
	}
	return false
}

// tieOwn takes the instant where several lanes end at once (ends, then
// takeOwn), and says whether one of them stops the run there instead.
func (s *sideBySide) tieOwn() bool {
	if s.ends() {
		return true
	}
	s.takeOwn()
	return false
}

// keepSeg keeps passive lane l's clock, re-based at at, among its segments;
// past maxSegs, a job's lane is caught up, and a rank lane stops the run.
func (s *sideBySide) keepSeg(l *sbsLane, at time.Duration) {
	l.segs = append(l.segs, l.clk)
	if len(l.segs) < maxSegs {
		return
	}
	if l.rank {
		s.full = true
		return
	}
	if s.saved.segs < 0 {
		l.catchUp(at + 1) // no epoch's save to honour (in one, save does)
	}
}
