package core

import (
	"fmt"
	"slices"
	"time"
)

// Turns is a lane whose running job and ready jobs take turns at its iteration
// boundaries while nothing else happens, each asking for its next iteration as
// its last one ends: under an order by request (pack, fcfs) they go round-robin,
// under least attained time first (fair) by the GPU time each has had, and
// under wfair and floor by that time per unit of share. The core
// says who goes when (Plan), so that a simulator takes many turns at once, in
// O(jobs in the lane), with the result of taking them boundary by boundary, and
// then carries them out (Take).
type Turns struct {
	s    *Scheduler
	l    *lane
	jobs []*jobState // the running job first, then the ready ones by their order
	// waiting are the lane's ready jobs of a less urgent priority, which take
	// no turn.
	waiting []*jobState
	rr      bool // round-robin (by request), else by attained time
	// perShare: the key is the attained time plus a credit, per unit of share
	// (wfair, floor: perShare), each job's credit and share below, by index.
	perShare bool
	credit   []time.Duration
	share    []float64
	base     []time.Duration
	sorted   []time.Duration
	order    []int
	keys     []int64 // each job's next key (Plan, Take), by job
	// at and atCost are Plan's counts and their GPU time, by job, at the
	// bracket's ends: [0] at lo, [1] at hi; costs is the last try's time.
	at     [2][]int
	atCost [2][]time.Duration
	costs  []time.Duration
}

// TurnCost is what the caller knows of the jobs taking turns, by their index
// in Turns.Jobs: how long their iterations are.
type TurnCost interface {
	// Cost is the GPU time of job i's next n turns (its next n iterations; the
	// running job's next after the one it runs).
	Cost(i, n int) time.Duration
	// Within is how many n >= 0 have Cost(i, n) < d, at most Turns(i)+1.
	Within(i int, d time.Duration) int
	// Turns is how many of job i's next turns may end within the turns: all but
	// its last iteration's (a job's last iteration ends with the job).
	Turns(i int) int
}

// Turns fills t with the turns of the lane of running job id, and says whether
// the core can foresee them: the lane has ready jobs of the running job's
// priority (they take turns; those of a less urgent one wait, and none is
// more urgent), no quantum holds the lane, nothing is pending, and the policy's
// order is by request or by attained time (per unit of share or not). A Turns
// may be reused.
func (s *Scheduler) Turns(id string, t *Turns) bool {
	js, err := s.find(id, running)
	if err != nil || s.needsAdmit || len(s.dirty) > 0 || s.policy.Quantum > 0 || s.defragOn() && !s.defragQuiet(js) {
		return false
	}
	l := js.lane
	if l.ready.Len() == 0 {
		return false
	}
	t.rr, t.perShare = false, false
	switch s.policy.Order.(type) {
	case ByRequest:
		t.rr = true
	case ByAttained:
	case ByWeightedAttained, ByFloor:
		t.perShare = true
	default:
		return false
	}
	// The ready jobs of the running job's priority take turns with it; those
	// of a less urgent one wait for all of them (a more urgent one takes the
	// lane at the next boundary: no turns).
	t.jobs, t.waiting = append(t.jobs[:0], js), t.waiting[:0]
	for _, r := range l.ready.jobs {
		switch p := r.view.Priority; {
		case p < js.view.Priority:
			return false
		case p == js.view.Priority:
			t.jobs = append(t.jobs, r)
		default:
			t.waiting = append(t.waiting, r)
		}
	}
	if len(t.jobs) == 1 {
		return false // nothing to take turns with: its boundaries are the probe's
	}
	t.s, t.l = s, l
	ready := t.jobs[1:]
	slices.SortFunc(ready, func(a, b *jobState) int {
		if a.readyKey != b.readyKey {
			return cmpInt64(a.readyKey, b.readyKey)
		}
		return a.view.Seq - b.view.Seq
	})
	t.credit, t.share = t.credit[:0], t.share[:0]
	if t.perShare {
		_, floor := s.policy.Order.(ByFloor)
		for _, js := range t.jobs {
			credit := time.Duration(0)
			if floor {
				credit = js.view.Credit // a job asking again at once keeps it
			}
			t.credit, t.share = append(t.credit, credit), append(t.share, js.view.Share())
		}
	}
	return true
}

// Jobs are the ids of the jobs taking turns: the running one first, then the
// ready ones in the policy's order.
func (t *Turns) Jobs(out []string) []string {
	out = out[:0]
	for _, js := range t.jobs {
		out = append(out, js.id())
	}
	return out
}

// Seqs are the jobs' arrival numbers (JobView.Seq: the order they arrived
// at the scheduler, from 0), in the order of Jobs: an engine that keeps its
// jobs by the order it called Arrive finds them without their names.
func (t *Turns) Seqs(out []int) []int {
	out = out[:0]
	for _, js := range t.jobs {
		out = append(out, js.view.Seq)
	}
	return out
}

// key is the policy's key of job i's turn n (from 0), before it: the smallest
// goes first, ties to tie.
func (t *Turns) key(c TurnCost, i, n int) int64 {
	if t.rr {
		pos := i - 1 // the running job asks after every ready one
		if i == 0 {
			pos = len(t.jobs) - 1
		}
		return int64(n)*int64(len(t.jobs)) + int64(pos)
	}
	return t.keyAt(i, c.Cost(i, n))
}

// keyAt is the key of job i's turn after cost more of GPU time, by attained
// time: the policy's Key of the job's view with that attained time
// (ByAttained, ByWeightedAttained, ByFloor).
func (t *Turns) keyAt(i int, cost time.Duration) int64 {
	if t.perShare {
		return perShare(t.base[i]+cost+t.credit[i], t.share[i])
	}
	return int64(t.base[i] + cost)
}

func (t *Turns) tie(i int) int {
	if t.rr {
		return 0 // keys are distinct
	}
	return t.jobs[i].view.Seq
}

// count is how many of job i's turns have a key below theta, at most Turns(i)+1.
func (t *Turns) count(c TurnCost, i int, theta int64) int {
	if t.rr {
		pos := t.key(c, i, 0)
		if theta <= pos {
			return 0
		}
		k := int64(len(t.jobs))
		return int(min((theta-pos+k-1)/k, int64(c.Turns(i))+1))
	}
	if t.perShare {
		// Below theta per unit of share: about theta x share of time, within
		// the rounding of a division, which the keys themselves set right.
		limit := c.Turns(i) + 1
		share := t.share[i]
		if share <= 0 {
			share = 1 // as perShare
		}
		b := t.base[i] + t.credit[i]
		x := float64(theta) * share // a key is below theta about where its time is below x
		n := 0
		if d := x - float64(b); d > 0 {
			n = c.Within(i, time.Duration(min(d, 1<<62)))
		}
		// A time clear of x by far more than a division's rounding needs no key.
		slack := x*1e-12 + 2
		for n > 0 {
			cost := c.Cost(i, n-1)
			if float64(b+cost) < x-slack || t.keyAt(i, cost) < theta {
				break
			}
			n--
		}
		for n < limit {
			cost := c.Cost(i, n)
			if float64(b+cost) > x+slack || t.keyAt(i, cost) >= theta {
				break
			}
			n++
		}
		return n
	}
	if theta <= int64(t.base[i]) {
		return 0
	}
	return c.Within(i, time.Duration(theta)-t.base[i])
}

// Plan finds the most turns that end, one after the other from the end of the
// running job's iteration, within budget (their GPU time in all below it, on a
// GPU that runs them at the speed they run alone), none of them a job's last.
// running is the GPU time of the running job's iteration. It writes into counts
// each job's turns that end and returns the job whose turn starts after them
// (an index of Jobs) and their GPU time. counts has a slot per job.
func (t *Turns) Plan(c TurnCost, running, budget time.Duration, counts []int) (next int, used time.Duration) {
	t.Begin(running)
	budget = min(budget, 1<<61) // keys stay far from overflow
	// The counts at the bracket's ends (lo, hi below), once a try has found
	// them all: a job's count is monotone in the key, so one whose count is
	// the same at both ends has it everywhere between, and is not counted
	// again (most of them, once the bracket is a turn of each job wide).
	known := [2]bool{}
	n := len(t.jobs)
	for e := range t.at {
		t.at[e] = slices.Grow(t.at[e][:0], n)[:n]
		t.atCost[e] = slices.Grow(t.atCost[e][:0], n)[:n]
	}
	t.costs = slices.Grow(t.costs[:0], n)[:n]
	costs := t.costs
	// fits says whether every turn with a key below theta fits, with their
	// time (-1 where a job's turns run out); each job's count is left in
	// counts, for above and below, and its time in costs.
	fits := func(theta int64) (ok bool, sum time.Duration) {
		for i := range t.jobs {
			if a, b := t.at[0][i], t.at[1][i]; known[0] && known[1] && (a == b || b-a < 8 && !t.rr) {
				// Its count is a, b or between: a few of its keys say,
				// where counting costs a search of its own.
				k, end := a, b
				for k < end {
					if m := int(uint(k+end) >> 1); t.key(c, i, m) < theta {
						k = m + 1
					} else {
						end = m
					}
				}
				switch counts[i] = k; k {
				case a:
					costs[i] = t.atCost[0][i]
				case b:
					costs[i] = t.atCost[1][i]
				default:
					costs[i] = c.Cost(i, k)
				}
				sum += costs[i]
				continue
			}
			k := t.count(c, i, theta)
			if k > c.Turns(i) {
				return false, -1
			}
			counts[i], costs[i] = k, c.Cost(i, k)
			sum += costs[i]
		}
		return sum < budget, sum
	}
	// keep makes the counts of the last fits those of end e.
	keep := func(e int) {
		copy(t.at[e], counts[:n])
		copy(t.atCost[e], costs)
		known[e] = true
	}
	// above is the least key not below the last theta fits tried, below the
	// greatest key below it: fits is the same from below, excluded, to above,
	// included.
	above := func() int64 {
		k := int64(1 << 62)
		for i := range t.jobs {
			k = min(k, t.key(c, i, counts[i]))
		}
		return k
	}
	below := func() int64 {
		k := int64(-1)
		for i, n := range counts[:len(t.jobs)] {
			if n > 0 {
				k = max(k, t.key(c, i, n-1))
			}
		}
		return k
	}
	lo, hi := int64(1<<62), int64(0)
	for i := range t.jobs {
		k := t.key(c, i, 0)
		lo, hi = min(lo, k), max(hi, k)
	}
	// Past every job's first key by the budget, the turns below take longer.
	if t.rr {
		least := c.Turns(0)
		for i := range t.jobs {
			least = min(least, c.Turns(i))
		}
		hi += int64(len(t.jobs)) * (int64(least) + 2)
	} else if t.perShare {
		// The job of the largest share gains the least key per unit of time.
		hi = int64(min(float64(hi)+float64(budget)/slices.Max(t.share)+2, 1<<62))
	} else {
		hi += int64(budget) + 1
	}
	// No job's turns may run out: below the key of each job's last turn (its
	// count would pass Turns above it), whatever the budget.
	last := int64(1 << 62)
	for i := range t.jobs {
		if n := c.Turns(i); n >= 0 {
			last = min(last, t.key(c, i, n)+1)
		} else {
			last = lo + 1 // none fits: the turns' count is 0, past its Turns
		}
	}
	if t.perShare && hi < last {
		// Keys per unit of share are rounded: make sure the budget is passed.
		if ok, _ := fits(hi); ok {
			hi = last
		}
	}
	hi = max(min(hi, last), lo+1)
	// No turn's key is below lo, the least first key.
	for i := range t.jobs {
		t.at[0][i], t.atCost[0][i] = 0, c.Cost(i, 0)
	}
	known[0] = true
	// fits(lo) and not fits(hi). The largest key that fits is unique (fits is
	// monotone in the key), so any way of narrowing finds it: each try moves
	// lo up to the next key or hi down to the key before (fits holds between
	// keys), and aims where the turns' time, which grows about linearly with
	// the key, meets the budget, halving after an aim that did not halve the
	// bracket. A few tries, where halving alone took some 35. The first tries: the key below which a job's
	// last turn, not the budget, ends the turns; then the guess where the
	// turns' time alone reaches the budget (fair: the attained times filled up
	// to one level; round-robin: whole rounds), within a turn of each job.
	loSum, hiSum := time.Duration(0), time.Duration(-1) // none below the first key
	// A try's counts are those of the end it moves: no key lies between
	// theta and above(), nor between below() and theta.
	try := func(theta int64) {
		if ok, sum := fits(theta); ok {
			lo, loSum = min(above(), hi-1), sum
			keep(0)
		} else {
			hi, hiSum = theta, sum
			known[1] = false
			if sum >= 0 {
				hi = max(below()+1, lo+1)
				keep(1)
			}
		}
	}
	if lo+1 < hi {
		try(hi - 1)
	}
	// (Per unit of share no guess has helped: tries from the ends do.)
	if !t.perShare {
		if g, w := t.guess(c, budget); lo+1 < hi && g-w > lo && g+w < hi {
			try(g - w)
			if lo+1 < hi && g+w > lo && g+w < hi {
				try(g + w)
			}
		}
	}
	for aim := true; lo+1 < hi; {
		mid, width := lo+(hi-lo)/2, hi-lo
		if aim && hiSum > loSum {
			x := lo + int64(float64(hi-lo)*float64(budget-loSum)/float64(hiSum-loSum))
			mid = min(max(x, lo+1), hi-1)
		}
		try(mid)
		// Aim again while aiming at least halves the bracket; else halve once.
		aim = !aim || hi-lo <= width/2
	}
	// lo's counts are the answer where a try found them.
	known[1] = known[0]
	copy(t.at[1], t.at[0])
	copy(t.atCost[1], t.atCost[0])
	ok, sum := fits(lo) // and counts, unless a job's turns ran out
	if ok {
		used = sum
	}
	if sum < 0 {
		for i := range t.jobs {
			counts[i] = t.count(c, i, lo)
		}
	}
	// Each job's next key, once.
	keys := slices.Grow(t.keys[:0], len(t.jobs))[:len(t.jobs)]
	for i := range t.jobs {
		keys[i] = t.key(c, i, counts[i])
	}
	t.keys = keys
	// The turns whose key is lo itself, in the order of their ties, while they fit.
	for {
		best := -1
		for i := range t.jobs {
			if counts[i] <= c.Turns(i) && keys[i] == lo && (best < 0 || t.tie(i) < t.tie(best)) {
				best = i
			}
		}
		if best < 0 || counts[best] == c.Turns(best) {
			break
		}
		d := c.Cost(best, counts[best]+1) - c.Cost(best, counts[best])
		if used+d >= budget {
			break
		}
		used += d
		counts[best]++
		keys[best] = t.key(c, best, counts[best])
	}
	next = 0
	for i := 1; i < len(t.jobs); i++ {
		if t.keyBefore(keys[i], i, keys[next], next) {
			next = i
		}
	}
	return next, used
}

// Begin starts the turns' order from the end of the running job's
// iteration, whose GPU time is running: Plan does it, NextTurn needs it.
func (t *Turns) Begin(running time.Duration) {
	t.base = t.base[:0]
	for i, js := range t.jobs {
		b := js.view.Attained
		if i == 0 {
			b += running
		}
		t.base = append(t.base, b)
	}
}

// RoundRobin says whether the turns go round by request: job i's turn is
// followed by job i+1's, the last's by the first's (NextTurn's order then).
func (t *Turns) RoundRobin() bool { return t.rr }

// NextTurn is the job whose turn starts once each job i has taken counts[i]
// turns, taken in all, in the policy's order (after Begin): a caller that
// times each turn itself (on a GPU whose share changes from turn to turn)
// takes them one by one, in O(1) under round-robin and O(jobs) by attained
// time, and carries them out with Take.
func (t *Turns) NextTurn(c TurnCost, counts []int, taken int) int {
	if t.rr {
		// The keys are 0, 1, 2...: the next is taken's, at place taken mod jobs.
		pos := taken % len(t.jobs)
		if pos == len(t.jobs)-1 {
			return 0
		}
		return pos + 1
	}
	next := 0
	for i := 1; i < len(t.jobs); i++ {
		if t.before(c, i, counts[i], next, counts[next]) {
			next = i
		}
	}
	return next
}

// guess is about the key up to which the turns take budget, and how far off
// it may be: a turn of each job (its next iteration's time, or a round).
func (t *Turns) guess(c TurnCost, budget time.Duration) (g, w int64) {
	var round time.Duration
	for i := range t.jobs {
		round += c.Cost(i, 1)
	}
	if t.rr {
		k := int64(len(t.jobs))
		return int64(budget/max(round, 1)) * k, 3 * k
	}
	// The level the attained times fill up to: sum over the jobs below it of
	// (level - base) = budget.
	t.sorted = append(t.sorted[:0], t.base...)
	slices.Sort(t.sorted)
	var sum time.Duration
	level := int64(0)
	for j, b := range t.sorted {
		sum += b
		level = int64((budget + sum) / time.Duration(j+1))
		if j+1 == len(t.sorted) || level <= int64(t.sorted[j+1]) {
			break
		}
	}
	return level, int64(2*round) + 2
}

// before says whether job i's turn n goes before job j's turn m.
func (t *Turns) before(c TurnCost, i, n, j, m int) bool {
	return t.keyBefore(t.key(c, i, n), i, t.key(c, j, m), j)
}

// keyBefore says whether job i's turn of key a goes before job j's of key b:
// the smaller key first, ties to tie.
func (t *Turns) keyBefore(a int64, i int, b int64, j int) bool {
	return a < b || a == b && t.tie(i) < t.tie(j)
}

// Last is the job whose turn, of those Plan's counts say end, ends last; -1
// when none does (the running job's iteration is the last to end).
func (t *Turns) Last(c TurnCost, counts []int) int {
	last := -1
	for i := range t.jobs {
		if counts[i] > 0 && (last < 0 || t.before(c, last, counts[last]-1, i, counts[i]-1)) {
			last = i
		}
	}
	return last
}

// Take carries out the turns Plan found, the last of them ending at now: the
// running job's iteration and counts[i] turns of each job i ended, after gpu[i]
// of GPU service in all (the running job's iteration included), and job next's
// turn starts. Nothing else may have happened since Turns but other jobs'
// boundaries of the same stretch (ContinueN).
func (t *Turns) Take(now time.Duration, c TurnCost, counts []int, gpu []time.Duration, next int) error {
	s, l := t.s, t.l
	if len(t.jobs) == 0 || l.holder != t.jobs[0] || t.jobs[0].phase != running {
		return fmt.Errorf("turns of lane %d: its running job changed since they were planned", l.id)
	}
	s.now = max(s.now, now)
	// Every job whose turn ended asked again: their requests are in the order
	// of their next turns (round-robin keeps that order).
	order := t.order[:0]
	for i, js := range t.jobs {
		ended := counts[i]
		if i == 0 {
			ended++
		}
		js.view.Attained += gpu[i]
		js.view.Iterations += ended
		if ended > 0 {
			order = append(order, i)
		}
	}
	// Their keys once each, not at each comparison (a key may cost a division).
	t.keys = slices.Grow(t.keys[:0], len(t.jobs))[:len(t.jobs)]
	for _, i := range order {
		t.keys[i] = t.key(c, i, counts[i])
	}
	slices.SortFunc(order, func(a, b int) int {
		if t.keyBefore(t.keys[a], a, t.keys[b], b) {
			return -1
		}
		return 1
	})
	t.order = order
	for _, i := range order {
		s.requests++
		// Asked: the turns' end, not each one's last ask; Turns take only
		// orders that read no time (Scheduler.Turns).
		t.jobs[i].view.RequestSeq, t.jobs[i].view.Asked = s.requests, now
	}
	// The lane's ready queue anew: every job but next.
	l.ready.clear()
	for i, js := range t.jobs {
		if i == next {
			continue
		}
		js.phase = ready
		l.ready.put(js)
	}
	for _, js := range t.waiting {
		l.ready.put(js)
	}
	x := t.jobs[next]
	x.phase = running
	if l.last != x {
		l.since = now
	}
	l.holder, l.last = x, x
	if ko, ok := s.policy.Order.(KeyOrder); ok {
		// The key it asked with, as dispatch sets the clock (a Rejoiner's).
		l.clock = ko.Key(x.view)
	}
	l.ready.init()
	t.jobs, t.waiting = t.jobs[:0], t.waiting[:0]
	return nil
}

func cmpInt64(a, b int64) int {
	if a < b {
		return -1
	}
	return 1
}
