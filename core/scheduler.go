package core

import (
	"container/heap"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Job is what the core needs to know of a job. Memory is in MiB.
type Job struct {
	ID         string
	Arrival    time.Duration
	Persistent float64
	Ephemeral  float64
	// Declared is the job's GPU time: how long its iterations take on the device
	// alone, start-up excluded (the job has started up before it competes). SRTF
	// orders by what is left of it.
	Declared time.Duration
	Priority int
	// GPUs is how many GPUs the job needs at once; 0 or 1 is one.
	GPUs int
	// Pinned, when not empty, is the GPUs (the node's indices) the job may go to,
	// and the only ones: a Kubernetes claim was allocated one device of the node,
	// and the job's process sees that GPU alone.
	Pinned []int
	// LaneCap, when positive, is the most memory a lane of the job's own may take
	// (a Kubernetes claim's memory): Salus's padding stops there, and never below
	// the job's peak.
	LaneCap float64
	// Share is the job's scheduling weight under wfair and floor (weightedfair.go):
	// its share of a lane's GPU time beside the others; 0 is 1. Not its compute
	// demand.
	Share float64
	// GPUModels, when not empty, is the GPU models the job may run on (Node.Model;
	// case does not matter), and the only ones.
	GPUModels []string
	// Model and Batch are the job's workload and batch size, when known: the
	// scheduler keeps them only for the policies to read (JobView.Model).
	Model string
	Batch int
}

// Action is the kind of a decision.
type Action int

// The decisions the core makes.
const (
	// Admit: the job is admitted into Lane (a new lane when NewLane is set).
	Admit Action = iota + 1
	// Start: the job's next iteration may start in Lane now.
	Start
)

func (a Action) String() string {
	switch a {
	case Admit:
		return "admit"
	case Start:
		return "start"
	case Defrag:
		return "defrag"
	case Migrate:
		return "migrate"
	}
	return fmt.Sprintf("action(%d)", int(a))
}

// Decision is one thing the caller must do.
type Decision struct {
	Action Action
	Job    string
	// Seq is the job's arrival number at the scheduler (JobView.Seq), on Admit
	// and Start: a caller finds its job by it without hashing Job.
	Seq      int
	Lane     int
	LaneSize float64 // Admit: the lane's size in MiB
	NewLane  bool    // Admit: the lane was opened for this job
	// Start: Previous is the job the lane ran before, when it was another job (a
	// switch at an iteration boundary); empty otherwise.
	Previous string
	// GPUs are the indices of the GPUs the lane is on: one, or all of a gang job's.
	// Shared with the scheduler: do not modify.
	GPUs []int
	// Regroup is what a Defrag did (defrag.go); nil for the other actions.
	Regroup *Regroup
	// After is, on Admit and Defrag, each lane the decision changed (Admit:
	// its lane; Defrag: Regroup.Changed, in order) as the decision left it. A
	// caller logs the lanes' memory from it: the scheduler's lanes (Lane) are
	// as the whole Decide left them, which may have gone on to change them.
	After []LaneAfter
	// Migrate (migrate.go): the lane the job left, its GPU, and the memory
	// to copy over the host link before the job runs on GPUs (MiB).
	From, FromGPU int
	CopyMiB       float64
}

// LaneAfter is a lane as a decision left it.
type LaneAfter struct {
	LaneInfo
	Open bool // false: the decision closed it
}

// after are lanes ids as they stand now (Decision.After).
func (s *Scheduler) after(ids ...int) []LaneAfter {
	out := make([]LaneAfter, len(ids))
	for i, id := range ids {
		out[i].ID = id
		if l, ok := s.laneByID[id]; ok {
			out[i] = LaneAfter{LaneInfo: l.view, Open: true}
		}
	}
	return out
}

type jobPhase uint8

const (
	waiting jobPhase = iota // not admitted yet
	idle                    // admitted, not asking for an iteration
	ready                   // asking for an iteration
	running                 // its iteration runs
	holding                 // ended an iteration, has not said whether it wants another
)

func (p jobPhase) String() string {
	return [...]string{"waiting for admission", "idle", "ready", "running an iteration", "between iterations"}[p]
}

// jobState is a job in the scheduler. It holds no copy of its Job: the
// fields of Job that its view does not have are its need's, shared by the
// jobs of the same need (need.go), since at a million jobs most of them wait
// and their state is most of the memory. Small fields go last, together.
type jobState struct {
	// view holds, besides what changes as the job runs, a pointer to its need
	// (need.go): what it needs and what it is (memory, GPUs, model, batch,
	// share), shared by jobs alike, so that what a policy may read costs the
	// hot state nothing.
	view JobView
	lane *lane
	// readyKey is its key in its lane's ready queue, under a KeyOrder.
	readyKey int64
	// starveAt: when it starts starving while it waits (admission.go).
	starveAt time.Duration
	// readyAt is its index in its lane's ready queue; -1 when not queued.
	readyAt int32
	phase   jobPhase
	// wants is set on a waiting job that already asked for its first iteration (its
	// start-up ended before it was admitted): admission makes it ready at once.
	wants bool
	// left: it left (its lane's and its class's lists drop it lazily).
	left bool
}

// id is the job's name.
func (js *jobState) id() string { return js.view.ID }

// job is the job as it arrived, rebuilt from its view and its need; its
// Share is the one it is scheduled with (ShareOf).
func (js *jobState) job() Job {
	return js.view.need.job(js.view)
}

// waits says whether js still waits for admission: the waiting lists skip
// the others.
func (js *jobState) waits() bool { return js.phase == waiting && !js.left }

type lane struct {
	id     int
	size   float64 // on each of its GPUs
	gpus   []int
	closed bool // a gang lane: no other job joins
	// jobs are the admitted jobs in admission order, with some that left (see
	// members.go); live counts the others. peaks indexes them by peak memory.
	jobs    []*jobState
	live    int
	peaks   map[float64][]*jobState
	maxPeak float64
	ready   readyQueue
	view    LaneInfo      // what compute gives, kept up to date (views.go)
	holder  *jobState     // running or holding the lane
	last    *jobState     // the job that ran last
	since   time.Duration // when last started its turn (for a quantum)
	clock   int64         // the key of the job started last (a Rejoiner's clock)
	dirty   bool          // in Scheduler.dirty: may have to start an iteration
}

// compute is the lane's view, from its jobs. With swapped set (suspend/resume:
// only the running job is resident), its memory is the biggest job's, found in
// O(1); otherwise the sums go over the lane's jobs, in the order they joined. The
// scheduler keeps each lane's view up to date (views.go) rather than computing it
// for every lane at every admission.
func (l *lane) compute(swapped bool) LaneInfo {
	li := LaneInfo{ID: l.id, Size: l.size, Jobs: l.live, GPU: l.gpus[0], Closed: l.closed}
	if len(l.gpus) > 1 {
		li.GPUs = l.gpus
	}
	if b := l.biggest(); b != nil && b.view.need.persistent+b.view.need.ephemeral > 0 {
		li.BiggestPersistent, li.BiggestEphemeral = b.view.need.persistent, b.view.need.ephemeral
	}
	if swapped {
		li.Persistent, li.MaxEphemeral = li.BiggestPersistent, li.BiggestEphemeral
		return li
	}
	l.each(func(j *jobState) {
		li.Persistent += j.view.need.persistent
		li.MaxEphemeral = max(li.MaxEphemeral, j.view.need.ephemeral)
	})
	return li
}

// Scheduler is the scheduling state machine of the GPUs of one node (New: one
// GPU). Every GPU has its own lanes; a job runs on one GPU, or on several at once
// (a gang job, Job.GPUs). It is not safe for
// concurrent use: the daemon serializes calls, the simulator is single-threaded.
//
// Time is a time.Duration since the start of the run: integer nanoseconds, so two
// events are at the same instant exactly when their times are equal, and the clock
// covers 292 years without losing a nanosecond.
//
// Events (Arrive, Request, IterationEnd, Yield, Leave) only change the state; the
// decisions come from Decide. A caller applies every event of an instant, then calls
// Decide, so that a policy chooses among every job ready at that instant, whatever
// order the events came in. Decisions can cause new events at the same instant (an
// admitted job that holds the GPU through a start-up of zero): the caller applies
// those and calls Decide again until it returns nothing.
type Scheduler struct {
	policy   Policy
	gpus     []float64 // usable memory of each GPU, MiB
	placeGPU GPUPlacement
	jobs     map[string]*jobState
	needs    map[needKey]*need // the needs shared (need.go)
	// The waiting jobs: in arrival order (order, from orderHead, with some that
	// were admitted or left since), and by class of memory need (members.go);
	// candidates are the classes the next admission tries.
	order     []*jobState
	orderHead int
	nWaiting  int
	// first is nextAdmitted's job among the classes when the waiting jobs
	// were firstAt.
	first      *jobState
	firstAt    waitedAt
	classes    map[classKey]*waitClass
	candidates []*waitClass
	fronts     []*jobState // admit's, beside candidates: each one's first waiting job
	freed      bool        // memory was freed since the last admission
	lanes      []*lane     // by id
	idleByGPU  [][]*lane   // bestMerge's, reused
	laneByID   map[int]*lane
	gv         []gpuView // by GPU: its lanes as placements see them (views.go)
	// nodes, in order, and the node of each GPU; placeNode orders them for a
	// job, nodeInfos is its reused buffer, sizes[k] counts the arrivals of k GPUs.
	nodes     []nodeState
	nodeOf    []int32
	placeNode NodePlacement
	// shapes are the nodes' shapes (nodeState.shape); emptyOf counts each
	// shape's empty nodes, and takesAll lists for each shape those whose
	// nodes take any job its nodes take (Untouched).
	shapes   []nodeShape
	emptyOf  []int
	takesAll [][]int
	// nodeModels are the nodes' models, and waitingFor how many waiting jobs
	// allow each.
	nodeModels []string
	waitingFor []int
	nodeInfos  []NodeInfo
	sizes      []int
	// freeSeq counts the GPUs\' changes that may have freed memory (refusals.go).
	freeSeq    uint64
	last       *jobState // the job find found last (nil after it left)
	dirty      []*lane   // lanes that may have to start an iteration
	needsAdmit bool      // memory was freed or a job arrived since the last admission
	nextLane   int
	arrivals   int
	requests   uint64
	// widest is the most GPUs a job has asked for; pinned: a job was pinned
	// to GPUs (Untouched).
	widest int
	pinned bool
	// naiveGangs turns off the refusal of gangs by the nodes' free lists
	// (gangindex.go): its tests compare the two.
	naiveGangs bool
	// byCount are the trees per count of GPUs over the nodes of a cluster,
	// from its first gang on, and capacities the GPUs' distinct capacities
	// (gangindex.go).
	byCount    []maxTree
	capacities []float64
	now        time.Duration
	// deadlines and starving: the waiting jobs by when they start starving, and
	// those starving, by arrival (policy-ordered admission only; admission.go).
	deadlines, starving jobHeap
}

// New returns a scheduler for one device with capacity MiB of usable memory.
func New(p Policy, capacity float64) *Scheduler {
	s, err := NewNode(p, Devices{Capacities: []float64{capacity}})
	if err != nil {
		panic(err) // one GPU cannot fail the checks
	}
	return s
}

// NewNode returns a scheduler for the GPUs of one node.
func NewNode(p Policy, d Devices) (*Scheduler, error) {
	if len(d.Capacities) == 0 {
		return nil, fmt.Errorf("a node needs at least one GPU")
	}
	for i, c := range d.Capacities {
		if math.IsNaN(c) || c < 0 || math.IsInf(c, 0) {
			return nil, fmt.Errorf("GPU %d: capacity %v MiB: give a finite number >= 0", i, c)
		}
	}
	if d.Placement == nil {
		d.Placement = LeastLoaded{}
	}
	if d.NodePlacement == nil {
		d.NodePlacement = FirstFitNode{}
	}
	nodes := d.Nodes
	if len(nodes) == 0 {
		nodes = []Node{{Count: len(d.Capacities)}}
	}
	gv := make([]gpuView, len(d.Capacities))
	for g, c := range d.Capacities {
		gv[g] = gpuView{prefix: []float64{c}, valid: 1}
	}
	s := &Scheduler{policy: p, gpus: slices.Clone(d.Capacities), placeGPU: d.Placement, jobs: map[string]*jobState{}, needs: map[needKey]*need{},
		classes: map[classKey]*waitClass{}, laneByID: map[int]*lane{}, gv: gv,
		deadlines: jobHeap{less: byStarveAt}, starving: jobHeap{less: bySeq},
		placeNode: d.NodePlacement, nodeOf: make([]int32, len(d.Capacities))}
	first := 0
	for i, n := range nodes {
		if n.Count < 0 {
			return nil, fmt.Errorf("node %d: %d GPUs: give a count >= 0", i, n.Count)
		}
		ns := nodeState{first: first, count: n.Count, model: n.Model}
		for g := first; g < first+n.Count && g < len(d.Capacities); g++ {
			c := d.Capacities[g]
			if i := slices.IndexFunc(ns.caps, func(x capCount) bool { return x.capacity == c }); i >= 0 {
				ns.caps[i].n++
			} else {
				ns.caps = append(ns.caps, capCount{c, 1})
			}
		}
		if key := indexKey(d.Placement); key != nil && n.Count > 1 {
			ns.index, ns.key = newGPUIndex(n.Count), key
		}
		if n.Count > 1 {
			// Every GPU's free memory is 0 until its first touch.
			for _, c := range ns.caps {
				ns.frees = append(ns.frees, make(freeList, c.n))
			}
		}
		s.nodes = append(s.nodes, ns)
		for g := first; g < first+n.Count && g < len(s.nodeOf); g++ {
			s.nodeOf[g] = int32(i)
		}
		first += n.Count
	}
	if first != len(d.Capacities) {
		return nil, fmt.Errorf("the nodes have %d GPUs in all but %d GPU capacities are given", first, len(d.Capacities))
	}
	s.shapeNodes()
	for _, c := range d.Capacities {
		if !slices.Contains(s.capacities, c) {
			s.capacities = append(s.capacities, c)
		}
	}
	for g := range d.Capacities {
		s.touch(g)
	}
	return s, nil
}

// Policy returns the policy in force.
func (s *Scheduler) Policy() Policy { return s.policy }

// Capacity returns the usable memory of all GPUs together, MiB.
func (s *Scheduler) Capacity() float64 {
	var sum float64
	for _, c := range s.gpus {
		sum += c
	}
	return sum
}

// GPUCount returns how many GPUs the node has.
func (s *Scheduler) GPUCount() int { return len(s.gpus) }

// GPUPlacement returns the GPU placement in force.
func (s *Scheduler) GPUPlacement() GPUPlacement { return s.placeGPU }

// Arrive registers a job. It waits for admission, which Decide gives when the
// job's memory fits.
func (s *Scheduler) Arrive(now time.Duration, j Job) error { return s.arrive(now, j, 0, 0) }

func (s *Scheduler) arrive(now time.Duration, j Job, attained time.Duration, iterations int) error {
	if j.ID == "" {
		return fmt.Errorf("job has no id")
	}
	if _, dup := s.jobs[j.ID]; dup {
		return fmt.Errorf("job %q already exists", j.ID)
	}
	for name, v := range map[string]float64{"persistent memory": j.Persistent, "ephemeral memory": j.Ephemeral} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("job %q: %s is %v MiB; it must be a finite number >= 0", j.ID, name, v)
		}
	}
	if j.Declared < 0 {
		return fmt.Errorf("job %q: declared GPU time %v must not be negative", j.ID, j.Declared)
	}
	if err := CheckShare(fmt.Sprintf("job %q: share", j.ID), j.Share); err != nil {
		return err
	}
	if err := s.Feasible(j); err != nil {
		return err
	}
	if err := s.tick(now); err != nil {
		return err
	}
	js := &jobState{phase: waiting, readyAt: -1, view: JobView{
		ID: j.ID, Seq: s.arrivals, Arrival: j.Arrival, Declared: j.Declared, Priority: j.Priority,
		Attained: attained, Iterations: iterations, Asked: now, need: s.needOf(j),
	}}
	s.arrivals++
	s.widest = max(s.widest, j.GPUs, 1)
	if s.widest > 1 && s.byCount == nil && len(s.nodes) > 1 {
		s.indexCounts()
	}
	s.pinned = s.pinned || len(j.Pinned) > 0
	if k := max(j.GPUs, 1); len(s.nodes) > 1 {
		for len(s.sizes) <= k {
			s.sizes = append(s.sizes, 0)
		}
		s.sizes[k]++
	}
	s.jobs[j.ID] = js
	s.order = append(s.order, js)
	s.nWaiting++
	s.countWaiting(j, 1)
	c := s.classes[keyOf(j)]
	quiet := s.admitsNothing(c) // asked before the job waits
	if c == nil {
		c = &waitClass{key: keyOf(j), jobHeap: jobHeap{less: s.admitLess}}
		s.classes[c.key] = c
	}
	js.view.need.class = c
	c.waiting++
	heap.Push(&c.jobHeap, js)
	s.track(js)
	s.queue(c)
	s.needsAdmit = s.needsAdmit || !quiet
	return nil
}

// Restore registers a job that arrived at j.Arrival (before now) and has already
// received attained GPU time over iterations iterations: a daemon rebuilding its
// sessions from its event log after a restart. Like an arrival, it waits for
// admission; policies see its arrival and attained time as they were, so fair and
// srtf order it as before the restart (its starvation clock, under policy-ordered
// admission, starts anew at now). Restoring jobs in their arrival order keeps
// ties (which go to the earlier arrival) as they were.
func (s *Scheduler) Restore(now time.Duration, j Job, attained time.Duration, iterations int) error {
	if attained < 0 || iterations < 0 {
		return fmt.Errorf("job %q: attained GPU time %v over %d iterations: neither may be negative", j.ID, attained, iterations)
	}
	if j.Arrival > now {
		return fmt.Errorf("job %q: restored with an arrival %v after now (%v)", j.ID, j.Arrival, now)
	}
	return s.arrive(now, j, attained, iterations)
}

// Request says the job asks to run its next iteration. A job still waiting for
// admission may ask too (its start-up is over): it is ready from its admission on.
func (s *Scheduler) Request(now time.Duration, id string) error {
	js, err := s.find(id, waiting, idle, holding)
	if err != nil {
		return err
	}
	if js.phase == waiting && js.wants {
		return fmt.Errorf("job %q already asked for its first iteration", id)
	}
	if err := s.tick(now); err != nil {
		return err
	}
	s.requests++
	js.view.RequestSeq, js.view.Asked = s.requests, now
	if js.phase == waiting {
		js.wants = true
		return nil
	}
	l := js.lane
	if l.holder == js {
		l.holder = nil
	}
	if js.phase == idle {
		s.rejoin(js, l)
	}
	js.phase = ready
	l.ready.add(js)
	s.markDirty(l)
	return nil
}

// IterationEnd records that the job's running iteration ended after gpuTime of GPU
// service. The lane stays with the job until it calls Request (it wants another
// iteration: the policy then chooses among all ready jobs, this one included),
// Yield or Leave.
func (s *Scheduler) IterationEnd(now time.Duration, id string, gpuTime time.Duration) error {
	js, err := s.find(id, running)
	if err != nil {
		return err
	}
	if gpuTime < 0 {
		return fmt.Errorf("job %q: iteration time %v must not be negative", id, gpuTime)
	}
	if err := s.tick(now); err != nil {
		return err
	}
	js.view.Attained += gpuTime
	js.view.Iterations++
	js.phase = holding
	return nil
}

// Yield releases the lane of a job that ended an iteration and does not ask for
// another now (an inference job between requests, a worker loading data).
func (s *Scheduler) Yield(now time.Duration, id string) error {
	js, err := s.find(id, holding)
	if err != nil {
		return err
	}
	if err := s.tick(now); err != nil {
		return err
	}
	js.phase = idle
	js.lane.holder = nil
	s.markDirty(js.lane)
	return nil
}

// Leave removes a job, finished or lost, in any phase. Its memory goes back to the
// device: the next Decide admits waiting jobs where they now fit.
func (s *Scheduler) Leave(now time.Duration, id string) error {
	js, ok := s.jobs[id]
	if !ok {
		return fmt.Errorf("unknown job %q", id)
	}
	if err := s.tick(now); err != nil {
		return err
	}
	delete(s.jobs, id)
	s.dropNeed(js)
	js.left = true
	if s.last == js {
		s.last = nil
	}
	if js.phase == waiting {
		// Its lists drop it (doneWaiting). A mode that admits in order may now
		// admit the job behind it.
		s.nWaiting--
		s.countWaiting(js.job(), -1)
		s.doneWaiting(js)
		s.needsAdmit = true
		return nil
	}
	s.needsAdmit, s.freed = true, true
	l := js.lane
	l.leave(js)
	l.ready.drop(js)
	if l.holder == js {
		l.holder = nil
	}
	if l.last == js {
		l.last = nil
	}
	if l.live == 0 {
		s.closeLane(l)
	} else {
		s.refresh(l)
		s.markDirty(l)
	}
	return nil
}

// Decide returns what the caller must do now that every event of the instant now
// has been applied: first the admissions that memory allows (waiting jobs in arrival
// order, or the policy's: admission.go; more urgent priorities first), then, on every lane that nobody holds, the start of the iteration of the
// ready job the policy puts first. Jobs admitted here that had already asked for an
// iteration compete in the same round.
func (s *Scheduler) Decide(now time.Duration) ([]Decision, error) { return s.DecideInto(now, nil) }

// DecideInto is Decide appending to out: a caller that reuses one buffer makes
// no allocation per decision.
func (s *Scheduler) DecideInto(now time.Duration, out []Decision) ([]Decision, error) {
	if err := s.tick(now); err != nil {
		return out, err
	}
	defrag := s.defragOn()
	if defrag && s.policy.Defrag.Split {
		out = s.split(out)
	}
	if s.deadlines.Len() > 0 && s.deadlines.jobs[0].starveAt <= now {
		// A waiting job starts starving: admission is decided at this instant
		// too (NextDeadline), not only at the next arrival or leave.
		s.needsAdmit = true
	}
	if s.needsAdmit {
		s.needsAdmit = false
		out = s.admit(out)
	}
	if defrag && s.policy.Defrag.Merge && s.nWaiting > 0 {
		out = s.merge(out)
	}
	out = s.dispatchDirty(out)
	if s.migrateOn() {
		// A job that waits for its turn goes to a GPU where nothing runs
		// (migrate.go), and starts there at once.
		out = s.dispatchDirty(s.migrate(out))
	}
	return out, nil
}

// dispatchDirty starts what the dirty lanes may start, in lane id order.
func (s *Scheduler) dispatchDirty(out []Decision) []Decision {
	if len(s.dirty) == 0 {
		return out
	}
	// Lanes in id order, so decisions come out in the same order whatever order the
	// events came in.
	slices.SortFunc(s.dirty, func(a, b *lane) int { return a.id - b.id })
	for _, l := range s.dirty {
		l.dirty = false
		out = s.dispatch(l, out)
	}
	clear(s.dirty)
	s.dirty = s.dirty[:0]
	return out
}

// Lanes returns a snapshot of the lanes, by id.
func (s *Scheduler) Lanes() []LaneInfo {
	out := make([]LaneInfo, len(s.lanes))
	for i, l := range s.lanes {
		out[i] = l.view
	}
	return out
}

// Lane returns a snapshot of lane id; false when no such lane is open.
func (s *Scheduler) Lane(id int) (LaneInfo, bool) {
	l, ok := s.laneByID[id]
	if !ok {
		return LaneInfo{}, false
	}
	return l.view, true
}

// Free returns the memory of all GPUs not allocated to any lane, in MiB.
func (s *Scheduler) Free() float64 {
	free := s.Capacity()
	for _, l := range s.lanes {
		free -= l.size * float64(len(l.gpus))
	}
	return free
}

// GPUs returns a snapshot of every GPU: its memory, lanes and jobs.
func (s *Scheduler) GPUs() []GPUInfo {
	out := s.gpuInfos()
	for i := range out {
		out[i].Lanes = slices.Clone(out[i].Lanes)
	}
	return out
}

// JobGPUs returns the GPUs job id holds a lane on; nil while it waits.
func (s *Scheduler) JobGPUs(id string) []int {
	if js, ok := s.jobs[id]; ok && js.lane != nil {
		return js.lane.gpus
	}
	return nil
}

// JobInfo returns what the scheduler knows of a job.
func (s *Scheduler) JobInfo(id string) (view JobView, lane int, admitted bool, ok bool) {
	js, ok := s.jobs[id]
	if !ok {
		return JobView{}, -1, false, false
	}
	if js.lane == nil {
		return js.view, -1, false, true
	}
	return js.view, js.lane.id, true, true
}

// Waiting returns the ids of the jobs waiting for admission, in arrival order.
func (s *Scheduler) Waiting() []string {
	out := make([]string, 0, s.nWaiting)
	for _, js := range s.order[s.orderHead:] {
		if js.waits() {
			out = append(out, js.id())
		}
	}
	return out
}

// WaitingCount is how many jobs wait for admission.
func (s *Scheduler) WaitingCount() int { return s.nWaiting }

// ReadyCount returns how many jobs of lane id wait for their iteration to start.
func (s *Scheduler) ReadyCount(id int) int {
	if l, ok := s.laneByID[id]; ok {
		return l.ready.Len()
	}
	return 0
}

// Jobs returns how many jobs the scheduler holds, admitted or waiting.
func (s *Scheduler) Jobs() int { return len(s.jobs) }

func (s *Scheduler) tick(now time.Duration) error {
	if now < s.now {
		return fmt.Errorf("time went backwards: %v after %v", now, s.now)
	}
	s.now = now
	return nil
}

func (s *Scheduler) find(id string, phases ...jobPhase) (*jobState, error) {
	// The job of the last call comes back most (an iteration's end, then its
	// request): compared by name, it costs no hashing.
	js := s.last
	if js == nil || js.id() != id {
		var ok bool
		if js, ok = s.jobs[id]; !ok {
			return nil, fmt.Errorf("unknown job %q", id)
		}
		s.last = js
	}
	for _, p := range phases {
		if js.phase == p {
			return js, nil
		}
	}
	return nil, fmt.Errorf("job %q is %s", id, js.phase)
}

// admit places waiting jobs in the order of admission (admitLess: by priority,
// then arrival or the policy's order); a later job may pass an earlier one that
// does not fit yet (unless the mode admits in order, or the earlier one starves). Each class of memory
// need is tried until one of its jobs is refused (members.go): the cost is in the
// admissions and the classes, not in the jobs that wait.
func (s *Scheduler) admit(out []Decision) []Decision {
	if s.freed {
		s.freed = false
		for k, c := range s.classes {
			c.blocked = false
			if c.front() == nil && !c.queued {
				delete(s.classes, k)
				continue
			}
			s.queue(c)
		}
	}
	if s.policy.Admission.ByPolicy {
		var blocked bool
		if out, blocked = s.admitStarving(out); blocked {
			return out
		}
	}
	if s.policy.AdmitInOrder {
		for _, c := range s.candidates {
			c.queued = false
		}
		s.candidates = s.candidates[:0]
		for js := s.firstWaiting(); js != nil; js = s.firstWaiting() {
			c := js.view.need.class
			if c.blocked {
				break
			}
			l, isNew := s.place(js.job(), c)
			if l == nil {
				c.blocked = true
				break
			}
			out = s.admitTo(js, l, isNew, out)
		}
		return out
	}
	h := classHeap{cs: s.candidates[:0], fronts: s.fronts[:0], less: s.admitLess}
	for _, c := range s.candidates {
		if js := c.front(); js != nil {
			h.cs, h.fronts = append(h.cs, c), append(h.fronts, js)
		} else {
			c.queued = false
		}
	}
	heap.Init(&h)
	for h.Len() > 0 {
		c, js := h.cs[0], h.fronts[0]
		l, isNew := s.place(js.job(), c)
		if l == nil {
			c.blocked = true
		} else {
			out = s.admitTo(js, l, isNew, out)
			if h.fronts[0] = c.front(); h.fronts[0] != nil {
				heap.Fix(&h, 0)
				continue
			}
		}
		c.queued = false
		heap.Pop(&h)
	}
	s.candidates, s.fronts = h.cs[:0], h.fronts[:0]
	return out
}

// queue makes c a candidate of the next admission, unless its refusal stands.
func (s *Scheduler) queue(c *waitClass) {
	if !c.blocked && !c.queued {
		c.queued = true
		s.candidates = append(s.candidates, c)
	}
}

// firstWaiting is the earliest waiting job; nil when none waits.
func (s *Scheduler) firstWaiting() *jobState {
	for s.orderHead < len(s.order) {
		if js := s.order[s.orderHead]; js.waits() {
			return js
		}
		s.order[s.orderHead] = nil
		s.orderHead++
	}
	s.order, s.orderHead = s.order[:0], 0
	return nil
}

// doneWaiting drops js, admitted or gone, from the waiting lists: skipped
// lazily, the jobs that no longer wait would keep their records (and their
// lanes) alive for the whole run (TestFinishedJobsAreNotHeld). Those at a
// list's front go now, which is most of them, as jobs are most often admitted
// in each list's order; a list is compacted once its others pass an eighth of
// its waiting jobs (a big job at the head, passed over by smaller ones behind
// it), in O(its length) after at least a ninth of that many stopped waiting:
// O(1) a job.
func (s *Scheduler) doneWaiting(js *jobState) {
	// Called once a job, when it stops waiting. Its need's class is its own:
	// a class with a job waiting is never dropped, so every job of the need
	// that arrived since found it.
	c := js.view.need.class
	c.front()
	if c.waiting--; overdue(c.Len(), c.waiting) {
		c.prune()
	}
	s.firstWaiting()
	if overdue(len(s.order)-s.orderHead, s.nWaiting) {
		s.order, s.orderHead = keepWaiting(s.order, s.orderHead), 0
	} else if s.orderHead > 64 && s.orderHead > len(s.order)/2 {
		clear(s.order[copy(s.order, s.order[s.orderHead:]):])
		s.order, s.orderHead = s.order[:len(s.order)-s.orderHead], 0
	}
	s.NextDeadline()
	for _, h := range []*jobHeap{&s.deadlines, &s.starving} {
		if overdue(h.Len(), s.nWaiting) {
			h.prune()
		}
	}
}

// overdue says whether a list of n jobs, of which at most waiting still wait,
// holds enough others to be compacted.
func overdue(n, waiting int) bool { return n > 64 && n-waiting > waiting/8 }

// admitTo admits js into l (a new lane when isNew).
func (s *Scheduler) admitTo(js *jobState, l *lane, isNew bool, out []Decision) []Decision {
	l.join(js)
	if isNew {
		l.id = s.nextLane
		s.nextLane++
		s.lanes = append(s.lanes, l)
		s.laneByID[l.id] = l
		s.opened(l)
	} else {
		s.joined(l, js)
	}
	js.lane = l
	js.phase = idle
	s.nWaiting--
	s.countWaiting(js.job(), -1)
	s.doneWaiting(js)
	if js.wants {
		// Its request reaches the lane's queue now: within the lane, requests
		// are served in the order they joined it.
		s.requests++
		js.view.RequestSeq, js.view.Asked = s.requests, s.now
		js.wants = false
		s.rejoin(js, l)
		js.phase = ready
		l.ready.add(js)
		s.markDirty(l)
	}
	return append(out, Decision{Action: Admit, Job: js.id(), Seq: js.view.Seq, Lane: l.id, LaneSize: l.size, NewLane: isNew, GPUs: l.gpus,
		After: s.after(l.id)})
}

// place finds where j goes now: an existing lane, or a new one (not yet
// numbered nor added, isNew set); nil when it must wait. On a cluster the node
// placement orders the nodes that could hold j, and the first node that takes
// it wins (placeOn): a job's GPUs are on one node.
func (s *Scheduler) place(j Job, c *waitClass) (l *lane, isNew bool) {
	if len(s.nodes) == 1 {
		return s.placeOn(j, 0, c)
	}
	k := max(j.GPUs, 1)
	if k > 1 && s.noNodeTakes(j, k) {
		return nil, false
	}
	infos := s.nodeInfos[:0]
	for i := range s.nodes {
		if n := &s.nodes[i]; n.count >= k && j.allows(n.model) {
			infos = append(infos, s.nodeInfo(i))
		}
	}
	s.nodeInfos = infos
	order := s.placeNode.Order(j, infos, s.sizes)
	// Every node placement packs among the GPUs that can run the job at once
	// first: the first node in its order with k idle GPUs (no lane) that take
	// the job gets it, on lanes of its own there. Only when no node has them
	// does the job go where lanes are (beside a busy GPU's lanes, or into
	// one, to wait for its turns): a placement's order alone would put it on a
	// busy GPU of the first node that takes it while GPUs elsewhere sit idle
	// (TestNoJobWaitsInALaneWhileAGPUIsIdle, package sim).
	for _, i := range order {
		if s.nodes[i].idle < k {
			continue
		}
		if l, isNew := s.placeOnIdle(j, i); l != nil {
			return l, isNew
		}
	}
	for _, i := range order {
		if l, isNew := s.placeOn(j, i, c); l != nil {
			return l, isNew
		}
	}
	return nil, false
}

// placeOnIdle is placeOn restricted to node ni's idle GPUs (no lane), in the
// GPU placement's order: new lanes there (a gang's on its first k idle GPUs
// that take it), or nothing.
func (s *Scheduler) placeOnIdle(j Job, ni int) (l *lane, isNew bool) {
	k := max(j.GPUs, 1)
	var chosen []int
	var size float64
	s.walk(j, &s.nodes[ni], func(g int) bool {
		if len(s.gv[g].lanes) > 0 {
			return false
		}
		c := s.gpus[g]
		where, ok := s.policy.Placement.Place(j, nil, c, c)
		if !ok || where.Lane >= 0 || where.NewSize > c {
			return false
		}
		size = max(size, where.NewSize)
		chosen = append(chosen, g)
		return len(chosen) == k
	})
	if len(chosen) < k {
		return nil, false
	}
	for _, g := range chosen {
		if size > s.gpus[g] {
			return nil, false // GPUs of different sizes: the largest lane must fit each
		}
	}
	slices.Sort(chosen)
	l = s.newLane(size, chosen)
	l.closed = k > 1
	return l, true
}

// placeOn finds where j goes on node n. The GPU placement orders the node's
// GPUs; on each, the policy's lane placement decides. A gang job gets a lane of
// its own on each of the first GPUs in that order with room for it.
func (s *Scheduler) placeOn(j Job, ni int, c *waitClass) (l *lane, isNew bool) {
	n := &s.nodes[ni]
	if k := max(j.GPUs, 1); k > 1 {
		if !s.gangMayFit(j, n, k) {
			return nil, false
		}
		var chosen []int
		var size float64
		s.walk(j, n, func(g int) bool {
			c := s.gpus[g]
			// The lane it would get alone on an empty GPU of this size.
			where, ok := s.policy.Placement.Place(j, nil, c, c)
			if !ok || where.Lane >= 0 || where.NewSize > s.freeOn(g) {
				return false
			}
			size = max(size, where.NewSize)
			chosen = append(chosen, g)
			return len(chosen) == k
		})
		if len(chosen) < k {
			return nil, false
		}
		for _, g := range chosen {
			if size > s.freeOn(g) {
				return nil, false // GPUs of different sizes: the largest lane must fit each
			}
		}
		slices.Sort(chosen)
		l := s.newLane(size, chosen)
		l.closed = true
		return l, true
	}
	try := func(g int) bool {
		info := s.gpuInfo(g)
		where, ok := s.policy.Placement.Place(j, info.Lanes, info.Free, info.Capacity)
		if !ok {
			return false
		}
		if where.Lane < 0 {
			l, isNew = s.newLane(where.NewSize, []int{g}), true
		} else {
			l = s.lane(where.Lane)
		}
		return true
	}
	if n.index == nil || c == nil {
		s.walk(j, n, try)
		return l, isNew
	}
	if !s.walkFreed(j, ni, c, try) {
		s.walk(j, n, try)
	}
	if l == nil {
		s.refused(c, ni)
	}
	return l, isNew
}

// walk calls try on node n's GPUs in the GPU placement's order (a pinned job's
// GPUs only) until it returns true. A built-in placement's order comes from the
// node's index (gpuindex.go); any other placement is asked its Order over the
// node's GPUs.
func (s *Scheduler) walk(j Job, n *nodeState, try func(g int) bool) {
	pinned := func(g int) bool { return len(j.Pinned) == 0 || slices.Contains(j.Pinned, g) }
	if n.count == 1 {
		if pinned(n.first) {
			try(n.first)
		}
		return
	}
	if x := n.index; x != nil {
		defer x.restore()
		for g := x.next(); g >= 0; g = x.next() {
			if pinned(n.first+g) && try(n.first+g) {
				return
			}
		}
		return
	}
	infos := make([]GPUInfo, n.count)
	for i := range infos {
		infos[i] = s.gpuInfo(n.first + i)
		infos[i].Work = s.workOn(n.first + i)
	}
	for _, g := range s.placeGPU.Order(j, infos) {
		if pinned(g) && try(g) {
			return
		}
	}
}

// Feasible returns an error when j could never be placed, even on empty GPUs: it
// needs more GPUs than any node has, a GPU model no node has, or more memory than
// enough GPUs of one node hold.
func (s *Scheduler) Feasible(j Job) error {
	if len(s.nodes) == 1 {
		n := s.nodes[0]
		if !j.allows(n.model) {
			return fmt.Errorf("job %q allows GPU models %s but the node's GPUs are %s: allow %s or run on a cluster that has one of them",
				j.ID, strings.Join(j.GPUModels, ", "), n.model, n.model)
		}
		return s.feasibleOn(j, n)
	}
	k := max(j.GPUs, 1)
	var err error
	allowed, big := false, 0
	for _, n := range s.nodes {
		if !j.allows(n.model) || n.count == 0 {
			continue
		}
		allowed, big = true, max(big, n.count)
		if n.count < k {
			continue
		}
		if err = s.feasibleOn(j, n); err == nil {
			return nil
		}
	}
	switch {
	case !allowed:
		return fmt.Errorf("job %q allows GPU models %s, which no node of the cluster has (it has %s): allow one of those or add a node of the model",
			j.ID, strings.Join(j.GPUModels, ", "), strings.Join(s.models(), ", "))
	case big < k:
		return fmt.Errorf("job %q needs %d GPUs at once but the largest node it may use has %d: a job's GPUs are on one node; add a node of %d GPUs or split the job",
			j.ID, k, big, k)
	}
	return err
}

// models lists the GPU models of the nodes, in node order.
func (s *Scheduler) models() []string {
	var ms []string
	for _, n := range s.nodes {
		if n.count > 0 && !slices.Contains(ms, n.model) {
			ms = append(ms, n.model)
		}
	}
	return ms
}

// feasibleOn is Feasible on node n alone.
func (s *Scheduler) feasibleOn(j Job, n nodeState) error {
	k := max(j.GPUs, 1)
	if k > n.count {
		return fmt.Errorf("job %q needs %d GPUs at once but the node has %d: give the run at least %d GPUs (--gpus)", j.ID, k, n.count, k)
	}
	gpus := n.caps // its GPUs' distinct capacities: a check per size, not per GPU
	if len(j.Pinned) > 0 {
		gpus = nil
		for _, g := range j.Pinned {
			if g < 0 || g >= len(s.gpus) {
				return fmt.Errorf("job %q is pinned to GPU %d but the node's GPUs are 0 to %d", j.ID, g, len(s.gpus)-1)
			}
			if g >= n.first && g < n.first+n.count {
				gpus = append(gpus, capCount{s.gpus[g], 1})
			}
		}
		if k > len(gpus) {
			return fmt.Errorf("job %q needs %d GPUs at once but is pinned to %d", j.ID, k, len(gpus))
		}
	}
	fit, tried := 0, map[float64]error{}
	for _, c := range gpus {
		err, seen := tried[c.capacity]
		if !seen {
			err = s.policy.Placement.Feasible(j, c.capacity)
			tried[c.capacity] = err
		}
		if err == nil {
			fit += c.n
		}
	}
	if fit >= k {
		return nil
	}
	for _, c := range gpus {
		if err := tried[c.capacity]; err != nil && (k == 1 || fit == 0) {
			return err
		}
	}
	return fmt.Errorf("job %q needs %d GPUs at once, and only %d of the node's GPUs have the memory for it: use bigger GPUs or a smaller batch", j.ID, k, fit)
}

// newLane is a lane not yet numbered nor added.
func (s *Scheduler) newLane(size float64, gpus []int) *lane {
	l := &lane{size: size, gpus: gpus, ready: readyQueue{less: s.less}}
	if k, ok := s.policy.Order.(KeyOrder); ok {
		l.ready.key = k.Key
	}
	return l
}

func (s *Scheduler) lane(id int) *lane {
	if l, ok := s.laneByID[id]; ok {
		return l
	}
	panic(fmt.Sprintf("core: placement chose lane %d, which does not exist", id))
}

func (s *Scheduler) closeLane(l *lane) {
	if i, ok := slices.BinarySearchFunc(s.lanes, l.id, func(x *lane, id int) int { return x.id - id }); ok {
		s.lanes = slices.Delete(s.lanes, i, i+1)
	}
	delete(s.laneByID, l.id)
	s.closed(l)
	if l.dirty {
		l.dirty = false
		s.dirty = remove(s.dirty, l)
	}
}

func (s *Scheduler) markDirty(l *lane) {
	if !l.dirty {
		l.dirty = true
		s.dirty = append(s.dirty, l)
	}
}

// dispatch starts the best ready job of an idle lane.
func (s *Scheduler) dispatch(l *lane, out []Decision) []Decision {
	if l.holder != nil || l.ready.Len() == 0 {
		return out
	}
	js := l.ready.first()
	// Within its quantum, the job that ran last keeps the lane while it asks for more.
	// A more urgent job ends the quantum.
	if q := s.policy.Quantum; q > 0 && l.last != nil && l.last.phase == ready && s.now-l.since < q &&
		l.last.view.Priority <= js.view.Priority {
		js = l.last
	}
	l.ready.take(js)
	d := Decision{Action: Start, Job: js.id(), Seq: js.view.Seq, Lane: l.id, GPUs: l.gpus}
	if l.last != nil && l.last != js {
		d.Previous = l.last.id()
	}
	if l.last != js {
		l.since = s.now
	}
	l.holder, l.last = js, js
	l.clock = js.readyKey
	js.phase = running
	// The engine asks about the job it starts next (Stretchable, then its
	// iteration's end): find then needs no hashing.
	s.last = js
	return append(out, d)
}

// rejoin credits js, idle until now, as the policy's Rejoiner says (floor.go).
func (s *Scheduler) rejoin(js *jobState, l *lane) {
	if r, ok := s.policy.Order.(Rejoiner); ok {
		js.view.Credit = r.Rejoin(js.view, l.clock)
	}
}

func (s *Scheduler) less(a, b *jobState) bool { return s.lessView(a.view, b.view) }

// lessView is the order of a lane's ready jobs: the more urgent priority, then
// the policy's order, ties to the earlier arrival.
func (s *Scheduler) lessView(a, b JobView) bool {
	if a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	if s.policy.Order.Less(a, b) {
		return true
	}
	if s.policy.Order.Less(b, a) {
		return false
	}
	return a.Seq < b.Seq
}

func remove[T comparable](xs []T, x T) []T {
	for i, y := range xs {
		if y == x {
			return append(xs[:i], xs[i+1:]...)
		}
	}
	return xs
}
