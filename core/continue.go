package core

import (
	"fmt"
	"math"
	"time"
)

// Continue ends job id's running iteration at now, after gpuTime of GPU service,
// and starts its next one in the same lane, when that is what IterationEnd,
// Request and Decide would do at now with nothing else happening: the job asks
// for another iteration at once, nothing else is pending, and the policy puts it
// before every ready job of its lane (or its quantum keeps it there). It then
// returns true, and the caller carries out that start as Decide's Start (no
// switch: Previous is empty). Otherwise it changes nothing and returns false, and
// the caller takes the usual path. A simulator runs the iterations of a job that
// nothing can interrupt this way, in one tight loop, with the same result.
func (s *Scheduler) Continue(now time.Duration, id string, gpuTime time.Duration) (bool, error) {
	js, err := s.find(id, running)
	if err != nil {
		return false, err
	}
	if gpuTime < 0 {
		return false, fmt.Errorf("job %q: iteration time %v must not be negative", id, gpuTime)
	}
	if now < s.now {
		return false, fmt.Errorf("time went backwards: %v after %v", now, s.now)
	}
	// Under defragmentation, a boundary may split or merge lanes.
	if s.needsAdmit || len(s.dirty) > 0 || s.defragOn() && !s.defragQuiet(js) {
		return false, nil
	}
	l := js.lane
	v := js.view
	v.Attained += gpuTime
	v.Iterations++
	v.RequestSeq, v.Asked = s.requests+1, now
	kept := s.quantumKeeps(js, now)
	if first := l.ready.first(); first != nil && (kept && first.view.Priority < v.Priority || !kept && !s.beforeQueued(v, first)) {
		return false, nil
	}
	s.now = now
	s.requests++
	js.view = v
	s.continued(js)
	return true, nil
}

// beforeQueued is lessView(v, first.view) for first, a job in its lane's
// ready queue: under a KeyOrder it reads first's key as the queue keeps it,
// rather than computing it again (an order from a policy file evaluates an
// expression for a key).
func (s *Scheduler) beforeQueued(v JobView, first *jobState) bool {
	key := first.lane.ready.key
	if key == nil {
		return s.lessView(v, first.view)
	}
	if v.Priority != first.view.Priority {
		return v.Priority < first.view.Priority
	}
	if k := key(v); k != first.readyKey {
		return k < first.readyKey
	}
	return v.Seq < first.view.Seq
}

// continued notes that js's next iteration started without a trip through its
// lane's ready queue: under a KeyOrder its key, and the lane's clock (the key of
// the job started last: floor.go), are what that trip would have set.
func (s *Scheduler) continued(js *jobState) {
	if key := js.lane.ready.key; key != nil {
		js.readyKey = key(js.view)
		js.lane.clock = js.readyKey
	}
}

// Stretchable says how job id's boundaries go for as long as nothing else
// happens (no arrival, no request, no other iteration's end in its lane): Free
// when every one is a Continue that says yes (it runs, nothing is pending, no
// job of its lane is ready), so that its next n may be taken at once with
// ContinueN; Checked when jobs of its lane are ready, so that each boundary's
// Continue decides; Never when it does not run or anything is pending. A job
// whose lane has ready jobs is Free too when it goes before them now and the
// order keeps it there (keepsLead: srtf's shortest job keeps winning), or when
// they are all of a less urgent priority.
func (s *Scheduler) Stretchable(id string) Stretch {
	js, err := s.find(id, running)
	if err != nil {
		return Never
	}
	if s.needsAdmit || len(s.dirty) > 0 || s.defragOn() && !s.defragQuiet(js) {
		return Never
	}
	first := js.lane.ready.first()
	if first == nil {
		return Free
	}
	if first.view.Priority > js.view.Priority {
		// Every ready job is of a less urgent priority: it goes before them
		// whatever it attains, quantum or not (Continue).
		return Free
	}
	if s.policy.Quantum == 0 && keepsLead(s.policy.Order) && s.beforeQueued(js.view, first) {
		// It goes before every ready job now, and only gains as it runs.
		return Free
	}
	return Checked
}

// SealsLanes says whether every lane stays as it is for as long as its job
// runs in it, whatever happens elsewhere: the placement seals its lanes
// (Sealing) and nothing regroups them (no defragmentation). A job alone in
// such a lane, Free, is Free until its last iteration, so a simulator may take
// all its boundaries at once, at the last, whatever arrives meanwhile.
func (s *Scheduler) SealsLanes() bool {
	p, ok := s.policy.Placement.(Sealing)
	return ok && p.Seals() && !s.policy.Defrag.Split && !s.policy.Defrag.Merge
}

// Untouched bounds what admissions can do to GPU g, which holds a lane: the
// jobs that arrive from now on may take this many GPUs, at least, before an
// admission reaches g, to join its lane or open one beside it. math.MaxInt
// under a placement that seals its lanes (none ever does). Otherwise the
// bound holds where g's node has GPUs of one size, under the least-loaded GPU
// placement (on a node, a GPU without jobs, so without lanes, comes before any
// with) and a built-in lane placement (each opens a lane on an empty GPU for
// any job the node can take), with no job pinned to GPUs (the daemon's
// claims), no defragmentation and no migration: admissions to g's node fill its GPUs
// without a lane first, and only admissions take them, whichever node each
// goes to; the waiting jobs that allow its model may take as many as they
// need first. 0 where no bound holds or none is left.
//
// Under the least-loaded node placement, an empty node (no job, no lane)
// that can take any job g's node can (emptyOf, takesAll) comes before it for
// every job (no jobs per GPU against some) and takes it on an empty GPU: an
// admission reaches g only once each such node has had one, so they add one
// GPU each.
func (s *Scheduler) Untouched(g int) int {
	if s.SealsLanes() {
		return math.MaxInt
	}
	n := &s.nodes[s.nodeOf[g]]
	if len(n.caps) != 1 || s.pinned || s.defragOn() || s.migrateOn() {
		return 0
	}
	if _, ok := s.placeGPU.(LeastLoaded); !ok {
		return 0
	}
	switch s.policy.Placement.(type) {
	case OneLane, SalusLanes, PerProcess, Swapped:
	default:
		return 0
	}
	free := n.idle
	if _, ok := s.placeNode.(LeastLoadedNode); ok && n.shape >= 0 {
		for _, k := range s.takesAll[n.shape] {
			free += s.emptyOf[k] // g's node holds g's lane: not among them
		}
	}
	return max(free-s.waitingFor[n.modelOf]*s.widest, 0)
}

// Alone says whether running job id is the only job of its lane, and its lane
// the only one on each of its GPUs (a gang's, on each rank's): nothing but an
// admission to one of them can change what runs there until the job leaves.
func (s *Scheduler) Alone(id string) bool {
	js, err := s.find(id, running)
	if err != nil || js.lane.live != 1 {
		return false
	}
	for _, g := range js.lane.gpus {
		if len(s.gv[g].lanes) != 1 {
			return false
		}
	}
	return true
}

// defragQuiet says whether, under defragmentation, running job js's
// boundaries leave its lane as it is for as long as nothing else happens. At
// each boundary the lane is idle for an instant, the only time it may be split
// (rule 1) or merged (rule 2: defrag.go); what decides either is the lane's
// jobs and size, its GPU's free memory and the waiting jobs, which its
// boundaries do not change. So they are quiet when the lane, idle, would not
// be split, and no merge with it (grown into its GPU's free memory, or with
// another lane of the GPU) would let the first waiting job in. A gang's lane
// is never split or merged.
func (s *Scheduler) defragQuiet(js *jobState) bool {
	l := js.lane
	if len(l.gpus) > 1 || l.closed {
		return true
	}
	if s.policy.Defrag.Split && s.splits(l) {
		return false
	}
	return !(s.policy.Defrag.Merge && s.nWaiting > 0 && s.couldMerge(l))
}

// keepsLead says whether, under order o, a running job's standing against the
// ready jobs only gets better as it runs: by remaining time (its remaining
// falls, theirs stays) or by arrival (no one's changes). Once before them, it
// stays before them at every boundary until something else happens.
func keepsLead(o Order) bool {
	switch o := o.(type) {
	case ByRemaining, ByArrival:
		return true
	case LeadKeeper:
		return o.KeepsLead()
	}
	return false
}

// losesLead says whether, under order o, a running job's standing against the
// ready jobs only gets worse as it runs: by the GPU time it attains (fair,
// LAS's queues, weighted fair's and floor's keys) or by the order of its
// requests (fcfs). Once after a ready job, it stays after it.
func losesLead(o Order) bool {
	switch o.(type) {
	case ByAttained, ByRequest, LAS, ByWeightedAttained, ByFloor:
		return true
	}
	return false
}

// LeadKeeper is an Order that says whether a running job's standing against
// the ready jobs of its lane only gets better as it runs (keepsLead): an
// order that reads nothing that changes as a job runs (its memory, its
// arrival, its declared time) says yes. A simulator then takes a leading
// job's boundaries at once (Stretchable's Free).
type LeadKeeper interface {
	Order
	KeepsLead() bool
}

// Stretch is what Stretchable says of a job's boundaries.
type Stretch int

// The answers of Stretchable.
const (
	Never Stretch = iota
	Free
	Checked
)

// ContinueN is n boundaries of job id taken as n Continues would take them, the
// last at now, after gpuTime of GPU service in all: valid only while
// Stretchable says Free (or Checked, each boundary said yes to by a
// ContinueProbe) and nothing else has happened since but other jobs'
// boundaries of the same stretch (now may be before those). The job's request
// sequence is the one its last Continue would give were the other boundaries of
// the same stretch interleaved before it; a running job's sequence is read
// only once it asks again, which gives it a new one.
func (s *Scheduler) ContinueN(now time.Duration, id string, n int, gpuTime time.Duration) error {
	js, err := s.find(id, running)
	if err != nil {
		return err
	}
	if n <= 0 || gpuTime < 0 {
		return fmt.Errorf("job %q: %d iterations of %v", id, n, gpuTime)
	}
	if s.Stretchable(id) == Never {
		return fmt.Errorf("job %q: its iterations cannot be stretched", id)
	}
	// The boundaries of one stretch are taken job by job, not in time order.
	s.now = max(s.now, now)
	s.requests += uint64(n)
	js.view.Attained += gpuTime
	js.view.Iterations += n
	js.view.RequestSeq, js.view.Asked = s.requests, now
	s.continued(js)
	return nil
}

// ContinueProbe says, boundary by boundary, what Continue would say of a job's
// next boundaries were nothing else to happen meanwhile, without changing the
// scheduler: a simulator finds how far a job whose lane has ready jobs goes on
// (Stretchable says Checked), then takes those boundaries with ContinueN.
type ContinueProbe struct {
	s   *Scheduler
	js  *jobState
	v   JobView
	req uint64
}

// Probe returns the probe of job id's next boundaries; false unless
// Stretchable says Free or Checked.
func (s *Scheduler) Probe(id string) (ContinueProbe, bool) {
	if s.Stretchable(id) == Never {
		return ContinueProbe{}, false
	}
	js, _ := s.find(id, running)
	return ContinueProbe{s: s, js: js, v: js.view, req: s.requests}, true
}

// Next says whether the boundary at now, after gpuTime of GPU service, would be
// a Continue that says yes, given the boundaries Next said yes to before.
func (p *ContinueProbe) Next(now, gpuTime time.Duration) bool {
	s, js := p.s, p.js
	l := js.lane
	v := p.after(1, now, gpuTime)
	kept := s.quantumKeeps(js, now)
	if first := l.ready.first(); first != nil && (kept && first.view.Priority < v.Priority || !kept && !s.beforeQueued(v, first)) {
		return false
	}
	p.v, p.req = v, p.req+1
	return true
}

// KeptBefore is the instant before which the probe's job keeps its lane at
// every boundary, whatever its standing: the policy's quantum holds the lane
// for it and no ready job is of a more urgent priority. Next says yes to every
// boundary before then, and Skip takes them at once. false when no quantum
// keeps it.
func (p *ContinueProbe) KeptBefore() (time.Duration, bool) {
	s, js := p.s, p.js
	l := js.lane
	if s.policy.Quantum <= 0 || l.last != js {
		return 0, false
	}
	if first := l.ready.first(); first != nil && first.view.Priority < p.v.Priority {
		return 0, false
	}
	return l.since + s.policy.Quantum, true
}

// Yeses says how many of the next n boundaries Next would say yes to one
// after another, and takes them as Skip would; at(k) is the instant of the
// k-th of them (from 1) and the GPU time of the first k in all. It looks at
// O(log n) of them where no quantum keeps the lane at the first and the
// order only loses the job its lead (losesLead: once Next says no, it says no
// to every later boundary, so the first no is found by halving) or only
// gains it (keepsLead: a yes to the first is a yes to all). false otherwise:
// ask Next boundary by boundary.
func (p *ContinueProbe) Yeses(n int, at func(k int) (now, service time.Duration)) (int, bool) {
	s, js := p.s, p.js
	l := js.lane
	gains := keepsLead(s.policy.Order)
	if n == 0 || !gains && !losesLead(s.policy.Order) {
		return 0, false
	}
	if from, _ := at(1); s.quantumKeeps(js, from) {
		return 0, false
	}
	first := l.ready.first()
	yes := func(k int) bool { // Next's answer to boundary k-1, after k in all
		if first == nil {
			return true
		}
		now, service := at(k)
		return s.beforeQueued(p.after(k, now, service), first)
	}
	take := func(k int) (int, bool) {
		if k > 0 {
			now, service := at(k)
			p.Skip(now, k, service)
		}
		return k, true
	}
	if gains {
		if !yes(1) {
			return 0, true
		}
		return take(n)
	}
	// Gallop to a boundary it says no to, then halve: yes up to lo, no at hi.
	lo, hi := 0, 1
	for hi <= n && yes(hi) {
		lo, hi = hi, 2*hi
	}
	hi = min(hi, n+1)
	for hi-lo > 1 {
		if mid := lo + (hi-lo)/2; yes(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return take(lo)
}

// Skip takes n boundaries that Next would say yes to (KeptBefore's), the last
// at now, after gpuTime of GPU service in all, as n calls of Next would.
func (p *ContinueProbe) Skip(now time.Duration, n int, gpuTime time.Duration) {
	p.v, p.req = p.after(n, now, gpuTime), p.req+uint64(n)
}

// after is the probe's view after n more boundaries, the last at now, with
// gpuTime of GPU service in all: what n Continues would leave it.
func (p *ContinueProbe) after(n int, now, gpuTime time.Duration) JobView {
	v := p.v
	v.Attained += gpuTime
	v.Iterations += n
	v.RequestSeq, v.Asked = p.req+uint64(n), now
	return v
}

// quantumKeeps says whether the policy's quantum keeps js's lane for it at a
// boundary at now: it ran last there, and its quantum has not ended.
func (s *Scheduler) quantumKeeps(js *jobState, now time.Duration) bool {
	l := js.lane
	return s.policy.Quantum > 0 && l.last == js && now-l.since < s.policy.Quantum
}
