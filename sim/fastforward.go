package sim

import (
	"container/heap"
	"fmt"
	"math"
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
	// turns, when set: its lane's jobs take turns (core.Turns), w the running one's.
	turns *turnCand
	// side: its GPU's lanes are run boundary by boundary (sideBySide), which
	// found m, last and prev (and the turns' plan).
	side bool
	// woken: a parked job's stretch, woken within this one (wakeEarly).
	woken bool
	// gang: a gang out of step, which a gangRun times (gangs.go).
	gang *gangRun
	// alone is when its last iteration would end were it to go on alone.
	alone time.Duration
}

// turnCand is a lane whose jobs take turns over a stretch: what the core
// planned and what it costs. The engine keeps them for reuse.
type turnCand struct {
	t      core.Turns
	ids    []string
	seqs   []int // the jobs' arrival numbers (engine.jobOf)
	jobs   turnJobs
	counts []int
	gpus   []time.Duration
	// waits, ends and taken: each job's waits, last end and turns so far,
	// while turnWaitsOf times the turns one by one (reused); a sideBySide
	// keeps each boundary's start and its wait in starts instead.
	waits  [][]eventlog.Wait
	ends   []time.Duration
	taken  []int
	starts []turnStart
	e0     time.Duration // the running job's iteration ends
	next   int           // whose turn starts at the end
	used   time.Duration // the turns' time, from e0
	final  bool          // next's turn is its last iteration
	// maxDemand is the highest demand of the lane's jobs (fixed point).
	maxDemand int64
	// atOne: the GPU runs at a share of 1 whichever of them runs, so that each
	// turn takes its standalone time (Plan times them); else only a sideBySide
	// can take them, and it gives the finish of next's iteration.
	atOne  bool
	finish vtime
	done   []time.Duration // a sideBySide's: where each job's turns so far end alone
}

// turnJob is a job taking turns: d is the index of its next iteration, turns
// how many of its next iterations may end within the turns (all but its last).
type turnJob struct {
	j      *job
	d      int
	turns  int
	at     time.Duration // j.at(d)
	demand int64         // fixed point
	fresh  bool          // it has not run yet
	// iterS and last are the job's iteration time and last iteration's
	// index, at hand for a sideBySide.
	iterS float64
	last  int
	unit  int // its row in the GPU's co-location model (Work.unit), set when it last entered the GPU
	// costN and cost are the last Cost asked of it (the zero value is Cost(0)).
	costN int
	cost  time.Duration
}

// atN is j.at(n) for the job: the same arithmetic, without the lookups.
func (m *turnJob) atN(n int) time.Duration {
	return time.Duration(math.Round(float64(n) * m.iterS * 1e9))
}

// turnJobs is core.TurnCost for a stretch's jobs taking turns. Their
// iterations follow each other on a GPU at a share of 1, with no delay, so
// each takes its standalone time, and the standalone times add up exactly.
type turnJobs []turnJob

// Cost is the GPU time of job i's next n iterations (none the first: d >= 1).
func (t *turnJobs) Cost(i, n int) time.Duration {
	m := &(*t)[i]
	if n != m.costN { // a plan asks for the same n again and again (Within, then the sum)
		m.costN, m.cost = n, m.atN(m.d+n)-m.at
	}
	return m.cost
}

// Turns is how many of job i's next iterations may end within the turns.
func (t *turnJobs) Turns(i int) int { return (*t)[i].turns }

// Within is how many n >= 0 have Cost(i, n) < d, at most Turns(i)+1: from
// the closed form of the iterations' ends, corrected by the rounding.
func (t *turnJobs) Within(i int, d time.Duration) int {
	m := &(*t)[i]
	limit := m.turns + 1
	x := float64(d+m.at)/(m.iterS*1e9) - float64(m.d)
	n := int(min(max(math.Floor(x), 0), float64(limit-1)))
	for n > 0 && t.Cost(i, n) >= d {
		n--
	}
	for n+1 < limit && t.Cost(i, n+1) < d {
		n++
	}
	return n + 1
}

// endOf is when the work phase of w's job's iteration done+k ends, its GPU's
// share unchanged: its iterations follow each other from w's finish.
func (j *job) endOf(g *GPU, w *Work, k int) time.Duration {
	return j.endOn(g.clockOf(w), g.now, w.finish, j.done, k)
}

// endOn is when iteration d+k of j ends on clock c (not before from), its
// iteration d ending at virtual finish f and the next following from it.
func (j *job) endOn(c *clock, from time.Duration, f vtime, d, k int) time.Duration {
	return c.endAfter(f.add(int64(j.at(d+k+1)-j.at(d+1))), from)
}

// boundariesBefore is how many of the next boundaries of w's job j, at most
// n, come before limit on g, its share unchanged: the largest m with
// iteration done+m-1 ending before it.
func (j *job) boundariesBefore(g *GPU, w *Work, limit time.Duration, n int) int {
	return j.endsBefore(g.clockOf(w), g.now, w.finish, j.done, n, limit)
}

// endsBefore is how many of j's iterations from d, at most n, end before
// limit on clock c (as endOn has them). The closed form of the ends (the
// clock's rate and the iterations' length) gives it to within a boundary or
// two, and their ends, which only grow, set it right.
func (j *job) endsBefore(c *clock, from time.Duration, f vtime, d, n int, limit time.Duration) int {
	// Iteration d+k ends before limit when j.at(d+k+1) is below x.
	x := float64(limit-c.t0)/c.share + c.v0.sub(f) + float64(j.at(d+1))
	m := n
	if per := j.iterS * 1e9; x < float64(n+d)*per {
		m = min(max(int(x/per)-d, 0), n)
	}
	for m > 0 && j.endOn(c, from, f, d, m-1) >= limit {
		m--
	}
	for m < n && j.endOn(c, from, f, d, m) < limit {
		m++
	}
	return m
}

// runOf is the GPU time of j's m iterations from iteration d: the sum of
// their iteration times (iteration's).
func (j *job) runOf(d, m int) time.Duration {
	gpu := j.at(d+m) - j.at(d)
	if d == 0 && m > 0 {
		gpu += j.firstExtra
	}
	return gpu
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
	if e.stretchSkip > 0 {
		// The last tries took nothing: iterations overlap here, and stretches wait.
		e.stretchSkip--
		return nil
	}
	if e.onlyDelays() {
		return nil // as the scan below would find (delayed), at less cost
	}
	limit = e.passTimers(e.passArrivals(limit))
	if d, ok := e.sched.NextDeadline(); ok {
		limit = min(limit, max(d, e.now)) // a waiting job starts starving: the core decides then
	}
	cands := e.cands[:0]
	delayed := false // a GPU waits for a delay's end, which is the next event there
	e.turnUsed = 0
	e.stretchGen++
	e.gangs = e.gangs[:0]
	sides := e.sides[:0]
	parks, looked := 0, false   // looked: a GPU that runs an iteration was looked at
	for _, gi := range e.busy { // an idle GPU has nothing to stretch
		g := e.gpus[gi]
		if g.Running() == 0 {
			continue
		}
		e.forwarded.scanned++
		looked = true
		at, _ := g.nextAt()
		ok := len(g.delays) == 0
		delayed = delayed || !ok
		from := len(cands)
		lastEnd := limit
		// side: its lanes may be run boundary by boundary (every job alone on
		// the GPU, every lane free, taking turns or in its job's last
		// iteration, ending: its end is where the run stops).
		side := e.sideBySideOK()
		ending := e.ending[:0]
		ranks := e.rankWorks[:0] // the ranks here of gangs out of step
		for _, w := range g.works {
			if !ok {
				break
			}
			j := w.job
			ok = j != nil && !w.held && j.parts == len(j.works) && j.spec.Kind != workload.Infer && j.iterS*1e9 >= 1 &&
				(len(j.works) == 1 || e.inStep(j))
			if !ok && j != nil && len(j.works) > 1 {
				// A gang out of step: a candidate of its own (gangs.go), once,
				// on the first of its GPUs looked at (live if that GPU is).
				r := e.steadyGang(j)
				if ok = r != nil; ok && !r.seen {
					r.seen = true
					kind := e.sched.Stretchable(j.spec.ID)
					if ok = kind != core.Never; ok {
						// Its last iteration's end bounds the stretch: timed once
						// every GPU has bounded it (below).
						cands = append(cands, stretchCand{w: j.lead, g: gi, checked: kind == core.Checked, ok: j.spec.Iterations - 1 - j.done, gang: r})
					}
				}
				// Its rank here goes beside lanes a sideBySide may run: the run
				// keeps the rank's rates (a rank lane).
				ranks = append(ranks, w)
				continue
			}
			if !ok {
				break
			}
			if len(j.works) > 1 && w != j.lead {
				continue // a gang is a candidate once, by its lead rank
			}
			kind := e.sched.Stretchable(w.Job)
			if ok = kind != core.Never; !ok {
				break
			}
			// Its last iteration's end changes the share: were it to go on
			// alone, at alone (below, unless its lane's turns are planned).
			last := j.spec.Iterations - 1 - j.done
			alone := j.endOf(g, w, last)
			side = side && len(j.works) == 1
			if last == 0 {
				ending = append(ending, w)
				lastEnd = min(lastEnd, alone)
			} else {
				c := stretchCand{w: w, g: gi, checked: kind == core.Checked, ok: last, alone: alone}
				if c.checked {
					c.turns = e.turnsOf(g, w, side)
					c.checked = c.turns == nil
					side = side && !c.checked
				}
				cands = append(cands, c)
			}
		}
		if !ok {
			cands = cands[:from]
			limit = min(limit, at) // this GPU's next end may change what runs
			continue
		}
		for i := range cands[from:] {
			if r := cands[from+i].gang; r != nil {
				r.live = true
			}
		}
		e.ending = ending
		if len(g.works) == 1 && len(cands) == from+1 {
			parked, err := e.park(&cands[from])
			if err != nil {
				return err
			}
			if parked {
				cands = cands[:from]
				parks++
				e.forwarded.parked++
				continue
			}
		}
		e.rankWorks = ranks
		if side && e.needsSide(g, cands[from:]) {
			sides = e.sideOf(sides, g, cands, from, ending, ranks)
			continue
		}
		e.turnsSideBySide(g, cands[from:])
		// A lane's planned turns end before any of its jobs' last iteration
		// ends (planTurns): its running job's end alone bounds nothing.
		for i := range cands[from:] {
			if c := &cands[from+i]; c.turns == nil {
				lastEnd = min(lastEnd, c.alone)
			}
		}
		limit = min(limit, lastEnd)
	}
	e.cands, e.sides = cands, sides
	limit = e.gangBounds(cands, limit, false)
	if parks > 0 {
		e.leaveBusy()
		e.stretchMiss = 0
	}
	// A parked job whose last boundary comes before the end is woken with
	// the stretch, its record among the others: its GPU's next event after
	// that, the end of its next iteration, may not be passed.
	limit = e.wakeBound(limit)
	// The checked jobs: where the core would say no, at a boundary before limit,
	// the lane may switch and its GPU's share change, so the stretch of every job
	// ends there.
	for i := range cands {
		if c := &cands[i]; c.checked && (c.gang == nil || !c.gang.coupled) {
			limit = e.probe(c, limit)
		}
	}
	limit = e.planTurns(cands, limit)
	limit = e.runSides(cands, sides, limit)
	// The gangs beside lanes a sideBySide ran are timed on the rates it kept
	// for their ranks; where they lower the limit, the runs go again to it
	// (their rates before it are the same).
	for {
		low := e.gangBounds(cands, limit, true)
		if low == limit {
			break
		}
		limit = e.runSides(cands, sides, e.planTurns(cands, low))
	}
	n := 0
	for i := range cands {
		c := &cands[i]
		j, g := c.w.job, e.gpus[c.g]
		if c.gang != nil {
			if c.gangTaken(limit) {
				cands[n] = *c
				n++
			}
			continue
		}
		if c.side {
			if c.m > 0 {
				cands[n] = *c
				n++
			}
			continue
		}
		if c.turns != nil {
			tc := c.turns
			if tc.next < 0 {
				continue
			}
			c.last, c.prev = tc.e0+tc.used, -1 // -1: one boundary, as a stretch's
			if last := tc.t.Last(&tc.jobs, tc.counts); last >= 0 {
				c.prev = c.last - (tc.jobs.Cost(last, tc.counts[last]) - tc.jobs.Cost(last, tc.counts[last]-1))
			}
			cands[n] = *c
			n++
			continue
		}
		if c.ok == 0 || g.endOf(c.w) >= limit {
			continue
		}
		// The boundaries before limit, short of the last iteration (or of the
		// core's no): at least one, the first ends before it.
		lo := j.boundariesBefore(g, c.w, limit, c.ok)
		c.m = lo
		c.last = j.endOf(g, c.w, lo-1)
		c.prev = -1
		if lo > 1 {
			c.prev = j.endOf(g, c.w, lo-2)
		}
		cands[n] = *c
		n++
	}
	cands = e.wakeEarly(cands[:n], limit)
	if len(cands) == 0 {
		if delayed || parks > 0 || !looked {
			// A switch's copy or cost: once it is over, the GPU's jobs may go on
			// alone (suspend/resume's next quantum), so try again then. No GPU
			// ran an iteration (each idle or parked): nothing was missed.
			return nil
		}
		e.stretchMiss = min(2*e.stretchMiss+1, 63)
		e.stretchSkip = e.stretchMiss
		return nil
	}
	e.stretchMiss = 0
	for _, c := range e.inTakingOrder(cands) {
		if err := e.takePassed(c.last); err != nil {
			return err
		}
		if c.gang != nil {
			if err := e.takeGang(c, limit); err != nil {
				return err
			}
			continue
		}
		if c.turns != nil {
			if err := e.takeTurns(*c); err != nil {
				return err
			}
			continue
		}
		if err := e.take(c); err != nil {
			return err
		}
		if c.woken {
			e.unparked(c)
		}
	}
	if err := e.takePassed(limit); err != nil {
		return err
	}
	for i := range sides {
		if err := sides[i].commit(); err != nil {
			return err
		}
	}
	e.rebase(limit)
	for _, gi := range e.busy {
		if g := e.gpus[gi]; len(g.works) > 1 {
			heap.Init(&g.works)
		}
	}
	return nil
}

// onlyDelays says whether every GPU that runs something waits for a delay's
// end (a switch's copy or cost: suspend/resume's next quantum), with no job
// parked: no GPU can take a stretch before then, and the stretch would take
// nothing. The main loop's next instant is that end, and the stretch then.
func (e *engine) onlyDelays() bool {
	if len(e.parked) > 0 {
		return false
	}
	looked := false
	for _, gi := range e.busy {
		g := e.gpus[gi]
		if g.Running() == 0 {
			continue
		}
		if len(g.delays) == 0 {
			return false
		}
		looked = true
	}
	return looked
}

// probe finds where the core would first say no to checked candidate c's
// boundaries before limit: c.ok is those it says yes to, and the limit is
// lowered to the boundary of the no.
func (e *engine) probe(c *stretchCand, limit time.Duration) time.Duration {
	j := c.w.job
	p, _ := e.sched.Probe(c.w.Job)
	k := 0
	if until, ok := p.KeptBefore(); ok {
		// A quantum keeps the lane: every boundary before its end is a yes.
		k = e.candBefore(c, min(limit, until), c.ok)
		if k > 0 {
			p.Skip(e.candEnd(c, k-1), k, j.runOf(j.done, k))
		}
	}
	if k < c.ok {
		// Where the order only loses the job its lead, or only gains
		// it, the first no is found by halving, not boundary by boundary.
		before := e.candBefore(c, limit, c.ok)
		if before > k {
			d := j.done + k
			yes, ok := p.Yeses(before-k, func(m int) (time.Duration, time.Duration) {
				return e.candEnd(c, k+m-1), j.runOf(d, m)
			})
			if ok {
				if k += yes; k < before {
					limit = e.candEnd(c, k)
				}
				c.ok = k
				return limit
			}
		}
	}
	for ; k < c.ok; k++ {
		end := e.candEnd(c, k)
		if end >= limit {
			break
		}
		if !p.Next(end, j.iteration(j.done+k)) {
			limit = end
			break
		}
	}
	c.ok = k
	return limit
}

// take carries out c, a job's stretch of c.m boundaries, the last at c.last:
// the core takes them at once, the log has one record, and the job's parts
// run its next iteration.
func (e *engine) take(c *stretchCand) error {
	w, j, g := c.w, c.w.job, e.gpus[c.g]
	d := j.done
	if err := e.continued(j, c, w.Lane); err != nil {
		return err
	}
	if c.side {
		e.forwarded.sideBySide += c.m
	}
	if g.each {
		e.forwarded.ownClocks += c.m
	}
	if len(j.works) == 1 {
		j.stretched(g, w, d, c.m)
		return nil
	}
	for i := range j.works {
		j.stretched(j.rankGPUs[i], &j.works[i], d, c.m)
	}
	return nil
}

// continued has the core take c's c.m boundaries of job j at once (the last
// at c.last), logs them as one stretch record of lane, and moves j on by them.
func (e *engine) continued(j *job, c *stretchCand, lane int) error {
	gpu := j.runOf(j.done, c.m)
	if err := e.sched.ContinueN(c.last, j.spec.ID, c.m, gpu); err != nil {
		return err
	}
	if e.log {
		e.emit(j, eventlog.StretchEvent(c.last, j.spec.ID, lane, c.m, gpu))
	}
	j.done += c.m
	j.requestedAt = c.last
	e.forwarded.iterations += c.m
	return nil
}

// inTakingOrder is cands in the order the iteration-by-iteration engine takes
// their last boundaries, which is the order they start their next iteration
// in (takingOrder). Pointers: a candidate is too big to be moved about by the
// sort. The slice is good until the next call.
func (e *engine) inTakingOrder(cands []stretchCand) []*stretchCand {
	order := e.order[:0]
	for i := range cands {
		order = append(order, &cands[i])
	}
	e.order = order
	slices.SortFunc(order, takingOrder)
	return order
}

// takingOrder orders stretches by their last boundary's time, then the
// boundary before (the order the iterations ending then started in), then
// GPU, then the order they started on it.
func takingOrder(a, b *stretchCand) int {
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
}

// stretched moves w, a part on g of job j's iteration d, on by m iterations:
// it runs iteration d+m, which starts where iteration d+m-1 ended, as a Start
// at that boundary would have put it.
func (j *job) stretched(g *GPU, w *Work, d, m int) {
	w.finish = w.finish.add(int64(j.at(d+m+1) - j.at(d+1)))
	w.Left = j.iteration(j.done)
	g.seq++
	w.seq = g.seq
}

// inStep says whether gang job j's ranks go on in step while their GPUs'
// shares stay as they are: every rank is in its work phase on a GPU with no
// delay, at a share of 1 with the clock's fraction (integer arithmetic, so its
// next iterations take their standalone times exactly), and all the ranks'
// parts end at the same instant. Its iterations then end as a one-GPU job's
// would, and a stretch takes them; otherwise a rank waits for another (a hold),
// and each iteration is an event. Answered once a stretch (e.stretchGen).
func (e *engine) inStep(j *job) bool {
	if j.stepGen == e.stretchGen {
		return j.stepOK
	}
	j.stepGen, j.stepOK = e.stretchGen, false
	var end time.Duration
	for i := range j.works {
		w, g := &j.works[i], j.rankGPUs[i]
		if w.gpu != g || !w.working || len(g.delays) > 0 {
			return false
		}
		g.settle()
		if g.each || g.share != 1 || w.finish.f != g.v0.f {
			return false
		}
		if at := g.endOf(w); i == 0 {
			end = at
		} else if at != end {
			return false
		}
	}
	j.stepOK = true
	return true
}

func cmpDur(a, b time.Duration) int {
	if a < b {
		return -1
	}
	return 1
}

// turnsSideBySide keeps the turns of the lanes of g, cands, only while g
// runs at a share of 1 whichever job each of them runs: turnsOf checked each
// lane's jobs beside the other lanes' running jobs, but a lane beside it that
// takes turns may switch to a job of higher demand. Where the highest demands
// together pass 1, those lanes are probed boundary by boundary instead.
func (e *engine) turnsSideBySide(g *GPU, cands []stretchCand) {
	for i := range cands {
		if c := &cands[i]; c.turns != nil && !c.turns.atOne {
			c.turns, c.checked = nil, true
		}
	}
	if !turnsPassOne(g, cands) {
		return
	}
	for i := range cands {
		if c := &cands[i]; c.turns != nil {
			c.turns, c.checked = nil, true
		}
	}
}

// turnsOf is the turns of running work w's lane on g, when a stretch may take
// them: the core foresees them (core.Turns), every job of the lane has run
// before (its first start is an event of its own) and is a one-GPU training
// job, nothing delays an iteration (no switch cost, no copy), and the GPU runs
// at a share of 1 whichever of them runs, so that each turn takes its
// standalone time. nil otherwise.
func (e *engine) turnsOf(g *GPU, w *Work, anyShare bool) *turnCand {
	atOne := g.share == 1 && w.finish.f == g.v0.f
	anyShare = anyShare && !e.turnsAtOne
	if g.im != nil && g.n > 1 {
		// Under a co-location model a turn changes who runs beside the other
		// lanes, and so their rates: only a sideBySide takes such turns.
		atOne = false
	}
	if !e.turnsOK || e.switchCost > 0 || e.o.Policy.Swapped || !atOne && !anyShare {
		return nil
	}
	if e.turnUsed == len(e.turnPool) {
		e.turnPool = append(e.turnPool, &turnCand{})
	}
	tc := e.turnPool[e.turnUsed]
	if !e.sched.Turns(w.Job, &tc.t) {
		return nil
	}
	tc.ids, tc.seqs = tc.t.Jobs(tc.ids), tc.t.Seqs(tc.seqs)
	tc.jobs, tc.maxDemand = tc.jobs[:0], 0
	base := g.sum - fixed(w.Demand)
	for i, id := range tc.ids {
		j := w.job
		if i > 0 {
			j = e.jobOf(tc.seqs[i], id)
		}
		// A job that has not run yet (fresh) has no work: its first start is
		// an event of its own (its first service), so only a sideBySide, which
		// stops before it, takes such turns.
		fresh := i > 0 && j != nil && j.done == 0
		if j == nil || j.spec.Kind == workload.Infer || j.iterS*1e9 < 1 || j.spec.GPUCount() != 1 ||
			len(j.works) != 1 && !(fresh && len(j.works) == 0) || fresh && !anyShare {
			return nil
		}
		demand := fixed(j.spec.Profile.Demand)
		if atOne = atOne && !fresh && g.shareOf(g.n, base+demand) == 1; !atOne && !anyShare {
			return nil
		}
		d := j.done
		if i == 0 {
			d++ // it runs iteration done
		}
		if i > 0 && !fresh && j.works[0].working {
			return nil
		}
		turns := j.spec.Iterations - d - 1
		if fresh {
			turns = 0 // its first turn ends the turns, before it starts
		}
		x := turnJob{j: j, d: d, turns: turns, at: j.at(d), demand: demand, fresh: fresh,
			iterS: j.iterS, last: j.spec.Iterations - 1}
		if !fresh {
			x.unit = j.works[0].unit
		}
		tc.jobs = append(tc.jobs, x)
		tc.maxDemand = max(tc.maxDemand, demand)
	}
	tc.counts = slices.Grow(tc.counts[:0], len(tc.ids))[:len(tc.ids)]
	tc.e0 = g.endOf(w)
	tc.atOne = atOne
	e.turnUsed++
	return tc
}

// planTurns plans the turns of the candidates up to limit and returns the
// limit lowered where a job's last iteration starts within them (its end
// changes what runs). A lowered limit plans every lane again.
func (e *engine) planTurns(cands []stretchCand, limit time.Duration) time.Duration {
	for changed := true; changed; {
		changed = false
		for i := range cands {
			tc := cands[i].turns
			if tc == nil || cands[i].side {
				continue
			}
			tc.next = -1
			if tc.e0 >= limit {
				continue
			}
			a := tc.jobs[0].j
			// The running job's iteration ends before limit: its boundary and
			// the turns that end before limit are taken (none, when the first
			// ends after it: the lane switches at e0 alone).
			next, used := tc.t.Plan(&tc.jobs, a.iteration(a.done), limit-tc.e0, tc.counts)
			tc.next, tc.used = next, used
			m := tc.jobs[next]
			tc.final = tc.counts[next] == m.turns
			if !tc.final {
				continue
			}
			// next's turn is its job's last iteration, whose end changes what runs.
			if end := tc.e0 + used + m.j.iteration(m.d+tc.counts[next]); end < limit {
				limit, changed = end, true
			}
		}
	}
	return limit
}

// turnWaitsOf times tc's turns one by one, in the core's order
// (Turns.NextTurn), from the end of the running job's iteration, each at its
// standalone time (the GPU is at a share of 1), and writes into turns (those
// of the jobs whose iterations ended, in the order of tc.jobs) how long each
// start before last waited, from its job's last end (before the stretch: when
// it last asked, which a job does as its iteration ends), and each job's last
// end. The turns must end at last.
func (e *engine) turnWaitsOf(tc *turnCand, last time.Duration, turns []eventlog.Turn) error {
	n := len(tc.jobs)
	tc.ends = slices.Grow(tc.ends[:0], n)[:n]
	tc.taken = slices.Grow(tc.taken[:0], n)[:n]
	tc.clearWaits()
	total := 0
	for i, m := range tc.jobs {
		tc.ends[i], tc.taken[i] = m.j.requestedAt, 0
		total += tc.counts[i]
	}
	now := tc.e0
	tc.ends[0] = now
	for taken := range total {
		i := tc.t.NextTurn(&tc.jobs, tc.taken, taken)
		m := &tc.jobs[i]
		addWait(&tc.waits[i], eventlog.WaitS(tc.ends[i].Seconds(), now.Seconds()))
		d := m.d + tc.taken[i]
		now += m.atN(d+1) - m.atN(d)
		tc.ends[i] = now
		tc.taken[i]++
	}
	if next := tc.t.NextTurn(&tc.jobs, tc.taken, total); now != last || next != tc.next {
		return fmt.Errorf("internal error: the turns of the lane of job %s, timed one by one, end at %v with job %d next; planned: at %v with job %d",
			tc.ids[0], now, next, last, tc.next)
	}
	tc.writeWaits(turns)
	return nil
}

// turnStart is a turn's start in a sideBySide's run: its job (an index of
// Turns.Jobs) and how long it waited.
type turnStart struct {
	i int
	s float64
}

// sideWaits writes into turns the waits a sideBySide's run kept: every
// boundary's start but the last, the one at the stretch's end.
func (tc *turnCand) sideWaits(turns []eventlog.Turn) {
	tc.clearWaits()
	for _, x := range tc.starts[:max(len(tc.starts)-1, 0)] {
		addWait(&tc.waits[x.i], x.s)
	}
	tc.writeWaits(turns)
}

// clearWaits empties each job's waits, a slot a job.
func (tc *turnCand) clearWaits() {
	for len(tc.waits) < len(tc.jobs) {
		tc.waits = append(tc.waits, nil)
	}
	for i := range tc.jobs {
		tc.waits[i] = tc.waits[i][:0]
	}
}

// writeWaits writes each job's waits and last end (tc.waits, tc.ends) into
// turns, those of the jobs whose iterations ended in the order of tc.jobs (as
// takeTurns writes them), and notes the end as when the job asked again.
func (tc *turnCand) writeWaits(turns []eventlog.Turn) {
	k := 0
	for i, m := range tc.jobs {
		if tc.counts[i] > 0 || i == 0 {
			turns[k].Waits, turns[k].EndS = tc.waits[i], tc.ends[i].Seconds()
			k++
			m.j.requestedAt = tc.ends[i]
		}
	}
}

// addWait counts a wait of s seconds into ws. The turns go round in the same
// order, so a job's waits are a few values: only the last 16 are looked at,
// so that a long stretch of waits that do differ costs no more than their
// count.
func addWait(ws *[]eventlog.Wait, s float64) {
	for k := len(*ws) - 1; k >= max(len(*ws)-16, 0); k-- {
		if (*ws)[k].S == s {
			(*ws)[k].N++
			return
		}
	}
	*ws = append(*ws, eventlog.Wait{S: s, N: 1})
}

// takeTurns carries out the turns of c's lane: the core's state, the jobs',
// the GPU's (the work of the job whose turn runs) and the record.
func (e *engine) takeTurns(c stretchCand) error {
	tc, g, wa := c.turns, e.gpus[c.g], c.w
	tc.gpus = tc.gpus[:0]
	turns := e.turnRecs[:0]
	ended := 0
	for i, m := range tc.jobs {
		n, gpu := tc.counts[i], tc.jobs.Cost(i, tc.counts[i])
		if i == 0 {
			n, gpu = n+1, gpu+m.j.iteration(m.j.done)
		}
		tc.gpus = append(tc.gpus, gpu)
		if n > 0 {
			turns = append(turns, eventlog.Turn{Job: tc.ids[i], Handle: m.j.handle, Iterations: n, GPU: gpu.Seconds()})
		}
		ended += n
	}
	if e.turnWaits {
		if c.side {
			tc.sideWaits(turns)
		} else if err := e.turnWaitsOf(tc, c.last, turns); err != nil {
			return err
		}
	}
	if err := tc.t.Take(c.last, &tc.jobs, tc.counts, tc.gpus, tc.next); err != nil {
		return err
	}
	for i, m := range tc.jobs {
		if i == 0 {
			m.j.done++
		}
		m.j.done += tc.counts[i]
	}
	x := tc.jobs[tc.next].j
	left := x.iteration(x.done)
	w := &x.works[0]
	if w != wa {
		heap.Remove(&g.works, wa.index)
		g.leave(wa)
		wa.endedAt = -1 // its next start follows another job's turn: no chain
		w.Job, w.Lane, w.Delay, w.Demand, w.job, w.gpu, w.held = x.spec.ID, wa.Lane, 0, x.spec.Profile.Demand, x, g, false
		g.enter(w)
	}
	w.Left = left
	x.parts = 1 // its iteration runs, in one part
	if c.side {
		w.finish = tc.finish
	} else {
		w.finish = g.vAt(c.last).add(int64(left))
	}
	x.requestedAt = c.last
	g.seq++
	w.seq = g.seq
	e.forwarded.iterations += ended
	if c.side {
		e.forwarded.sideBySide += ended
	}
	if g.each {
		e.forwarded.ownClocks += ended
	}
	e.turnRecs = turns
	if e.log {
		e.emit(x, eventlog.TurnsEvent(c.last, x.spec.ID, wa.Lane, turns))
	}
	return nil
}
