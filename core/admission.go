package core

import (
	"container/heap"
	"math"
	"strings"
	"time"
)

// Admission in the policy's order, with an anti-starvation bound.
//
// By default the jobs that wait for memory are admitted in arrival order (a later
// job passes an earlier one only when the earlier one does not fit). With
// ModeParams.Admission "policy", a lane-based policy admits them in its own order
// instead: srtf the least remaining declared GPU time first, fair the least
// attained, pack and fcfs in arrival order (a waiting job's request order is its
// arrival order). In both, a more urgent priority (a smaller number) comes first.
//
// The bound: a job that has waited K x its declared GPU time (K is
// Admission.StarveFactor; the wait is counted on the scheduler's clock from its
// Arrive or Restore) is starving. Starving jobs are admitted first, in arrival
// order, whatever their priority; when the first of them does not fit, nothing
// else is admitted until it does (as in-order admission blocks). So a later
// arrival is admitted ahead of a waiting job J only at an instant t < a + K x d,
// a being J's arrival and d its declared time: J is never passed over after
// it has waited K x d. A job that declares no time is starving from its arrival
// and is never passed over. The bound does not say how long J then waits: that is
// until the jobs admitted before it free enough memory.

// The admission orders, for ModeParams.Admission.
const (
	AdmitByArrival = "arrival"
	AdmitByPolicy  = "policy"
)

// AdmissionOrders lists the admission orders.
var AdmissionOrders = []string{AdmitByArrival, AdmitByPolicy}

// DefaultStarveFactor is K of policy-ordered admission when none is given: a job
// may be passed over during its first 50 lengths of waiting. A small K makes
// admission under load nearly strict arrival order (most jobs starve, and a
// starving job that does not fit blocks the others), which loses to plain
// arrival order on srtf's average JCT; 50 was chosen on salus100 seeds 11 to 20
// at loads 1 to 8 (docs/concepts.md's figures are of seeds 1 to 10), where arrival
// order itself left jobs waiting up to 400 lengths.
const DefaultStarveFactor = 50.0

// Admission is the order in which a policy admits the jobs that wait for memory.
// The zero value is arrival order.
type Admission struct {
	// ByPolicy admits in the policy's order, under the starvation bound.
	ByPolicy bool
	// StarveFactor is K: a job is starving once it has waited K x its declared
	// GPU time.
	StarveFactor float64
}

// admissionOf is the admission p runs under with mp. The modes that admit in
// plain arrival order (AdmitInOrder: separate processes, priorities aside) keep
// it: no job ever passes another there, so there is no bound to keep. Every other
// policy, fifo (exclusive) included, admits by priority, so under policy-ordered
// admission it keeps the starvation bound too: a starving job is admitted first
// whatever its priority, under fifo as under the lane policies.
func admissionOf(p Policy, mp ModeParams) (Admission, error) {
	if err := mp.Validate(); err != nil {
		return Admission{}, err
	}
	k := mp.StarveFactor
	if strings.ToLower(mp.Admission) != AdmitByPolicy {
		return Admission{}, nil
	}
	if p.AdmitInOrder {
		return Admission{}, nil
	}
	if k == 0 {
		k = DefaultStarveFactor
	}
	return Admission{ByPolicy: true, StarveFactor: k}, nil
}

// starveAt is when a job of declared GPU time that arrives at now starts to
// starve under factor k.
func starveAt(now time.Duration, k float64, declared time.Duration) time.Duration {
	w := k * float64(declared)
	if w >= float64(math.MaxInt64-now) {
		return math.MaxInt64
	}
	return now + time.Duration(w)
}

// admitLess is the order of admission of two waiting jobs: the more urgent
// priority, then (by policy) the policy's order, then the earlier arrival.
func (s *Scheduler) admitLess(a, b *jobState) bool {
	if a.view.Priority != b.view.Priority {
		return a.view.Priority < b.view.Priority
	}
	if s.policy.Admission.ByPolicy {
		va, vb := waitView(a), waitView(b)
		if s.policy.Order.Less(va, vb) {
			return true
		}
		if s.policy.Order.Less(vb, va) {
			return false
		}
	}
	return a.view.Seq < b.view.Seq
}

// waitView is a waiting job as the policy's order sees it at admission: it has
// no request in a lane's queue yet, so its request order is its arrival order.
func waitView(js *jobState) JobView {
	v := js.view
	v.RequestSeq = uint64(v.Seq)
	return v
}

// track starts js's starvation clock (policy-ordered admission only).
func (s *Scheduler) track(js *jobState) {
	if !s.policy.Admission.ByPolicy {
		return
	}
	js.starveAt = starveAt(s.now, s.policy.Admission.StarveFactor, js.view.Declared)
	heap.Push(&s.deadlines, js) // pruned as jobs stop waiting (doneWaiting)
}

// NextDeadline is the next instant at which the core must decide although no
// event comes: under policy-ordered admission, when the next waiting job starts
// starving (it may then be admitted ahead of the others, or block them). The
// engine calls Decide at that instant, after the events of the instant, if any;
// false when there is no such instant. It changes after Arrive, Restore, Leave
// and Decide.
func (s *Scheduler) NextDeadline() (time.Duration, bool) {
	for s.deadlines.Len() > 0 {
		js := s.deadlines.jobs[0]
		if js.waits() {
			return js.starveAt, js.starveAt < math.MaxInt64
		}
		heap.Pop(&s.deadlines)
	}
	return 0, false
}

// admitStarving admits the starving jobs in arrival order and reports whether
// the first one that does not fit blocks the rest of the admission.
func (s *Scheduler) admitStarving(out []Decision) ([]Decision, bool) {
	for s.deadlines.Len() > 0 && s.deadlines.jobs[0].starveAt <= s.now {
		if js := heap.Pop(&s.deadlines).(*jobState); js.waits() {
			heap.Push(&s.starving, js)
		}
	}
	for s.starving.Len() > 0 {
		js := s.starving.jobs[0]
		if !js.waits() {
			heap.Pop(&s.starving)
			continue
		}
		c := js.view.need.class
		if c.blocked {
			return out, true
		}
		l, isNew := s.place(js.job(), c)
		if l == nil {
			c.blocked = true
			return out, true
		}
		heap.Pop(&s.starving)
		out = s.admitTo(js, l, isNew, out)
	}
	return out, false
}

// nextAdmitted is the single-GPU waiting job that admission places first once it
// fits (a lane merge makes room for it: defrag.go): under policy-ordered
// admission the earliest starving job, or nil when that one needs several GPUs
// (it blocks every other); otherwise the first single-GPU job in the order of
// admission. Nil when none waits.
func (s *Scheduler) nextAdmitted() *jobState {
	if s.policy.Admission.ByPolicy {
		for s.starving.Len() > 0 {
			js := s.starving.jobs[0]
			if js.waits() {
				if max(js.view.need.gpus, 1) > 1 {
					return nil
				}
				return js
			}
			heap.Pop(&s.starving)
		}
	}
	// In arrival order (admitLess by priority and arrival, which do not change
	// while a job waits) the answer stands until a job arrives or stops
	// waiting: pack-merge asks at every probe of a lane (couldMerge), and the
	// classes are a map, each with its first job out of the cache.
	at := waitedAt{s.arrivals, s.nWaiting}
	if !s.policy.Admission.ByPolicy && s.firstAt == at && s.first != nil {
		return s.first
	}
	var first *jobState
	for k, c := range s.classes {
		if k.gpus > 1 {
			continue
		}
		if js := c.front(); js != nil && (first == nil || s.admitLess(js, first)) {
			first = js
		}
	}
	s.first, s.firstAt = first, at
	return first
}

// waitedAt says which jobs wait: a job joins them only as it arrives and
// leaves them for good, so the arrivals and how many wait tell one set from
// another.
type waitedAt struct{ arrivals, waiting int }

// jobHeap is a heap of jobs in the order of less; it may hold jobs that were
// admitted or left since they were pushed (its users skip them).
type jobHeap struct {
	jobs []*jobState
	less func(a, b *jobState) bool
}

func (h *jobHeap) Len() int           { return len(h.jobs) }
func (h *jobHeap) Less(i, j int) bool { return h.less(h.jobs[i], h.jobs[j]) }
func (h *jobHeap) Swap(i, j int)      { h.jobs[i], h.jobs[j] = h.jobs[j], h.jobs[i] }
func (h *jobHeap) Push(x any)         { h.jobs = append(h.jobs, x.(*jobState)) }
func (h *jobHeap) Pop() any {
	n := len(h.jobs) - 1
	js := h.jobs[n]
	h.jobs[n] = nil
	h.jobs = h.jobs[:n]
	return js
}

// prune drops the jobs that no longer wait.
func (h *jobHeap) prune() {
	h.jobs = keepWaiting(h.jobs, 0)
	heap.Init(h)
}

// keepWaiting moves the jobs of list[from:] that still wait to its front, in
// their order, and returns them; the rest of list is cleared, so that it holds
// no job that stopped waiting.
func keepWaiting(list []*jobState, from int) []*jobState {
	kept := list[:0]
	for _, js := range list[from:] {
		if js.waits() {
			kept = append(kept, js)
		}
	}
	clear(list[len(kept):])
	return kept
}

var _ heap.Interface = (*jobHeap)(nil)

func byStarveAt(a, b *jobState) bool {
	if a.starveAt != b.starveAt {
		return a.starveAt < b.starveAt
	}
	return a.view.Seq < b.view.Seq
}

func bySeq(a, b *jobState) bool { return a.view.Seq < b.view.Seq }

// OnlyWaits says whether j, arriving now, would only join the waiting jobs:
// no decision would follow at its arrival nor, for its sake, later, until
// memory is freed. Its class is refused and an admission would admit
// nothing (admitsNothing), no lane waits to be dispatched, and the policy
// moves no lane for a waiting job (no defragmentation or migration). None
// of that changes as running lanes take their turns, short of a job's
// leaving, so an engine may take such an arrival late, at any instant before
// the next one that frees memory, with the same result: the simulator's
// stretches run past these arrivals (sim's passArrivals).
func (s *Scheduler) OnlyWaits(j Job) bool {
	if len(s.dirty) > 0 || s.defragOn() || s.migrateOn() || !s.admitsNothing(s.classes[keyOf(j)]) {
		return false
	}
	return s.Feasible(j) == nil
}

// RequestWaits says whether a request of job id now, the end of its
// start-up, would only be noted: the job waits for admission and has not
// asked before. Its request reaches a lane's queue when it is admitted
// (admitTo), in the request order of then; until then it moves nothing but
// the count of requests, whose order it keeps. An engine may take it late,
// before the job could be admitted, with the same result.
func (s *Scheduler) RequestWaits(id string) bool {
	js, ok := s.jobs[id]
	return ok && js.phase == waiting && !js.wants
}

// admitsNothing says whether an admission now, after a job of class c
// arrives, would admit nothing: c is refused (no job of its memory fitted
// since memory was last freed), no other class waits to be tried, and the
// policy admits by no clock (no starvation) and, admitting in arrival order,
// stops at a refused class. An arrival then needs no admission.
func (s *Scheduler) admitsNothing(c *waitClass) bool {
	if s.needsAdmit || s.freed || c == nil || !c.blocked || s.policy.Admission.ByPolicy {
		return false
	}
	for _, q := range s.candidates {
		if q.queued {
			return false
		}
	}
	if s.policy.AdmitInOrder {
		if js := s.firstWaiting(); js != nil && js.view.need.class != nil && !js.view.need.class.blocked {
			return false
		}
	}
	return true
}
