// Package clusterstudy computes, from a run's event log, its trace and the
// cluster it ran on, what a cluster operator looks at: per node shape and per
// GPU model the utilization and the allocation rate, the fragmentation rate as
// FGD defines it, the queueing delay per priority (QoS) class, and the
// simulated scheduling delay and run beside the trace's own. The log's GPU
// indices are the cluster's (numbered node by node, cluster.NodeOf), so the
// study works for any engine's log; it reads events and never schedules.
package clusterstudy

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/salusgo/salus/cluster"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/workload"
)

// Result is the study of one run.
type Result struct {
	// Run names it (the policy, "exclusive").
	Run  string `json:"run"`
	Jobs int    `json:"jobs"`
	// SpanS is the time the figures are over: first arrival to last end.
	SpanS float64 `json:"span_s"`
	// Cluster is the whole cluster's figures; Shapes and Models its groups.
	Cluster Group   `json:"cluster"`
	Shapes  []Group `json:"shapes"`
	Models  []Group `json:"models"`
	// Classes are the queueing delays per priority, most urgent first.
	Classes []Class `json:"classes"`
	// RunRatio compares each job's simulated completion time (arrival to end)
	// with the trace's own run (scheduled to end), for the jobs the trace gives
	// it: on a cluster with room enough they are equal.
	RunRatio Ratio `json:"run_ratio"`
}

// Group is the figures of a set of GPUs (a shape's nodes, a model's GPUs).
type Group struct {
	Name  string `json:"name"`
	Nodes int    `json:"nodes"`
	GPUs  int    `json:"gpus"`
	// Utilization is the busy GPU time over the GPU time: at each instant a GPU
	// is as busy as the demands of its running iterations add up to, at most 1.
	Utilization float64 `json:"utilization"`
	// Allocation is the allocated GPU time over the GPU time: a GPU is allocated
	// the shares of the jobs admitted on it (a pod's gpu_milli, else the whole
	// GPU; the whole GPU in an exclusive run), at most 1.
	Allocation float64 `json:"allocation"`
	// Fragmentation is FGD's fragmentation rate: the fragmented GPU time over
	// the unallocated GPU time (see Fragmentation); 0 when nothing was free.
	Fragmentation float64 `json:"fragmentation"`
}

// Class is the queueing of one priority class.
type Class struct {
	Priority int `json:"priority"`
	Jobs     int `json:"jobs"`
	// Sim is the simulated queueing delay (arrival to first service), Trace the
	// trace's own (scheduled - created), over the class's jobs that have it.
	Sim   Dist `json:"sim"`
	Trace Dist `json:"trace"`
}

// Dist is a distribution's mean, median and 95th percentile, seconds (a ratio
// for Ratio), over N values.
type Dist struct {
	N      int     `json:"n"`
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	P95    float64 `json:"p95"`
}

// Ratio is Dist for a ratio.
type Ratio = Dist

func dist(xs []float64) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return Dist{N: len(xs), Mean: s / float64(len(xs)), Median: metrics.Percentile(xs, 0.5), P95: metrics.Percentile(xs, 0.95)}
}

// Study follows a run's events (an eventlog.Sink) and computes its Result.
type Study struct {
	c      *cluster.Cluster
	jobs   map[string]*jobState
	gpus   []gpuState
	nodes  []nodeState
	types  []taskType
	groups []*groupState // the cluster, the shapes, the models
	col    *metrics.Collector
	first  float64
	last   float64
	began  bool
	// whole: the run gave each job whole GPUs (mode exclusive), whatever its share.
	whole bool
	err   error
}

type jobState struct {
	spec    *workload.Job
	share   float64 // its allocation of each of its GPUs, in (0, 1]
	demand  float64 // what its running iteration keeps busy
	gpus    []int
	running bool
	ended   bool
}

// gpuState is one GPU's allocation and busy demand now, and their integrals.
type gpuState struct {
	alloc, busy      float64
	since            float64
	allocS, busyS    float64
	node, shape, mdl int
}

type nodeState struct {
	frag, free float64 // FGD's fragmentation and the free GPU, now (GPUs)
}

// groupState accumulates a group's integrals; fragS and freeS are lazy over the
// group's nodes' current sums.
type groupState struct {
	Group
	frag, free   float64
	fragS, freeS float64
}

// New starts a study of trace t's run on cluster c.
func New(c *cluster.Cluster, t *workload.Trace) *Study {
	s := &Study{c: c, jobs: map[string]*jobState{}, gpus: make([]gpuState, c.GPUCount()), nodes: make([]nodeState, len(c.Nodes)), col: metrics.NewCollector()}
	for i := range t.Jobs {
		j := &t.Jobs[i]
		share := 1.0
		if j.Demand != nil && *j.Demand > 0 && *j.Demand < 1 {
			share = *j.Demand
		}
		s.jobs[j.ID] = &jobState{spec: j, share: share, demand: math.Min(1, j.Profile.Demand)}
	}
	s.types = taskTypes(t)
	s.groups = []*groupState{{Group: Group{Name: "cluster"}}}
	shapeAt, modelAt := map[string]int{}, map[string]int{}
	group := func(at map[string]int, name string) int {
		if i, ok := at[name]; ok {
			return i
		}
		at[name] = len(s.groups)
		s.groups = append(s.groups, &groupState{Group: Group{Name: name}})
		return at[name]
	}
	for n, node := range c.Nodes {
		if node.GPUs() == 0 {
			continue
		}
		sh, md := group(shapeAt, "shape "+node.Shape), group(modelAt, "model "+node.Model)
		for _, g := range []int{0, sh, md} {
			s.groups[g].Nodes++
			s.groups[g].GPUs += node.GPUs()
		}
		for k := range node.GPUs() {
			s.gpus[c.FirstGPU(n)+k] = gpuState{node: n, shape: sh, mdl: md}
		}
		s.refresh(n)
	}
	return s
}

// Emit takes one event of the run, in time order.
func (s *Study) Emit(e eventlog.Event) {
	if s.err != nil {
		return
	}
	s.col.Emit(e)
	s.advance(e.T)
	if e.Kind == eventlog.Run {
		s.whole = e.Mode == core.ModeExclusive
		return
	}
	j := s.jobs[e.Job]
	if j == nil {
		if e.Kind == eventlog.Arrive {
			s.err = fmt.Errorf("the log's job %q is not in the trace: give the trace the run was of", e.Job)
		}
		return
	}
	switch e.Kind {
	case eventlog.Admit:
		j.gpus = e.Gang
		if len(j.gpus) == 0 {
			j.gpus = []int{e.GPUIndex}
		}
		for _, g := range j.gpus {
			if g < 0 || g >= len(s.gpus) {
				s.err = fmt.Errorf("job %q admitted on GPU %d: the cluster has GPUs 0 to %d; give the cluster the run was on", e.Job, g, len(s.gpus)-1)
				return
			}
		}
		s.allocate(j, 1)
	case eventlog.IterStart:
		if !j.running {
			j.running = true
			s.run(j, 1)
		}
	case eventlog.IterEnd:
		if j.running {
			j.running = false
			s.run(j, -1)
		}
	case eventlog.Stretch:
		if len(e.Turns) > 0 {
			s.turns(e, j)
		}
	case eventlog.Finish, eventlog.Lost:
		if j.running {
			j.running = false
			s.run(j, -1)
		}
		if !j.ended && len(j.gpus) > 0 {
			s.allocate(j, -1)
		}
		j.ended = true
	}
}

// TakesTurns is true: the study takes stretches of a lane's turns
// (eventlog.TurnsSink).
func (s *Study) TakesTurns() bool { return true }

// TakesTurnsAtOneOnly is true (eventlog.TurnsAtOneSink): the GPUs' busy
// demand counts each turn's GPU time, its time only at a share of 1 (turns).
func (s *Study) TakesTurnsAtOneOnly() bool { return true }

// turns takes a stretch of a lane's turns on its GPU: next runs after it. The
// study counted the first turn's job's demand busy since its iteration began;
// each other job's turns took their GPU time (at a share of 1, which the
// lane's turns keep whichever job runs, that is their time and the GPU's busy
// demand is not capped) at its own demand instead.
func (s *Study) turns(e eventlog.Event, next *jobState) {
	before := s.jobs[e.Turns[0].Job]
	if before == nil || !before.running {
		return
	}
	for _, g := range before.gpus {
		s.settle(g) // up to e.T, with before's demand
		for _, tu := range e.Turns[1:] {
			if x := s.jobs[tu.Job]; x != nil {
				s.gpus[g].busyS += tu.GPU * (x.demand - before.demand)
			}
		}
	}
	if before != next {
		before.running, next.running = false, true
		s.run(before, -1)
		s.run(next, 1)
	}
}

// Boundary is an iteration boundary (eventlog.BoundarySink): the job ran on,
// nothing of the study changed.
func (s *Study) Boundary(job string, handle, lane int, t, gpuS float64) {
	s.col.Boundary(job, handle, lane, t, gpuS)
	s.advance(t)
}

// advance integrates the groups' fragmentation up to t.
func (s *Study) advance(t float64) {
	if !s.began {
		s.began, s.first, s.last = true, t, t
		return
	}
	if dt := t - s.last; dt > 0 {
		for _, g := range s.groups {
			g.fragS += g.frag * dt
			g.freeS += g.free * dt
		}
		s.last = t
	}
}

// settle integrates GPU g's allocation and busy demand up to now.
func (s *Study) settle(g int) {
	st := &s.gpus[g]
	dt := s.last - st.since
	if dt > 0 {
		st.allocS += math.Min(1, st.alloc) * dt
		st.busyS += math.Min(1, st.busy) * dt
	}
	st.since = s.last
}

func (s *Study) allocate(j *jobState, sign float64) {
	nodes := map[int]bool{}
	for _, g := range j.gpus {
		s.settle(g)
		share := j.share
		if s.whole {
			share = 1
		}
		s.gpus[g].alloc = math.Max(0, s.gpus[g].alloc+sign*share)
		nodes[s.gpus[g].node] = true
	}
	for n := range nodes {
		s.refresh(n)
	}
}

func (s *Study) run(j *jobState, sign float64) {
	for _, g := range j.gpus {
		s.settle(g)
		s.gpus[g].busy = math.Max(0, s.gpus[g].busy+sign*j.demand)
	}
}

// refresh recomputes node n's fragmentation and free GPU, and its groups' sums.
func (s *Study) refresh(n int) {
	node := s.c.Nodes[n]
	first := s.c.FirstGPU(n)
	free := make([]int, node.GPUs())
	for k := range free {
		free[k] = freeMilli(s.gpus[first+k].alloc)
	}
	frag := Fragmentation(free, node.Model, s.types) / 1000
	total := 0
	for _, f := range free {
		total += f
	}
	old := s.nodes[n]
	s.nodes[n] = nodeState{frag: frag, free: float64(total) / 1000}
	st := s.gpus[first]
	for _, g := range []int{0, st.shape, st.mdl} {
		s.groups[g].frag += frag - old.frag
		s.groups[g].free += float64(total)/1000 - old.free
	}
}

// freeMilli is a GPU's unallocated share in thousandths, as FGD counts it.
func freeMilli(alloc float64) int {
	return 1000 - min(1000, int(math.Round(alloc*1000)))
}

// Result is the study's figures; run names the run.
func (s *Study) Result(run string) (Result, error) {
	if s.err != nil {
		return Result{}, s.err
	}
	m, err := s.col.Result()
	if err != nil {
		return Result{}, err
	}
	r := Result{Run: run, Jobs: m.Jobs, SpanS: s.last - s.first}
	for g := range s.gpus {
		s.settle(g)
	}
	for _, g := range s.groups {
		g.Utilization, g.Allocation = 0, 0
	}
	for _, st := range s.gpus {
		for _, g := range []int{0, st.shape, st.mdl} {
			s.groups[g].Utilization += st.busyS
			s.groups[g].Allocation += st.allocS
		}
	}
	for i, g := range s.groups {
		if gpuS := float64(g.GPUs) * r.SpanS; gpuS > 0 {
			g.Utilization /= gpuS
			g.Allocation /= gpuS
		}
		if g.freeS > 0 {
			g.Fragmentation = g.fragS / g.freeS
		}
		switch name, _ := strings.CutPrefix(g.Name, "shape "); {
		case i == 0:
			r.Cluster = g.Group
		case name != g.Name:
			gr := g.Group
			gr.Name = name
			r.Shapes = append(r.Shapes, gr)
		default:
			gr := g.Group
			gr.Name = strings.TrimPrefix(g.Name, "model ")
			r.Models = append(r.Models, gr)
		}
	}
	byClass := map[int]*struct{ sim, trace []float64 }{}
	var ratios []float64
	for _, jr := range m.Completion {
		j := s.jobs[jr.ID]
		if j == nil || jr.Lost {
			continue
		}
		p := j.spec.Priority
		if byClass[p] == nil {
			byClass[p] = &struct{ sim, trace []float64 }{}
		}
		byClass[p].sim = append(byClass[p].sim, jr.QueuingS)
		if q := j.spec.TraceQueueS; q != nil {
			byClass[p].trace = append(byClass[p].trace, *q)
		}
		if run := j.spec.TraceRunS; run != nil && *run > 0 {
			ratios = append(ratios, jr.JCTS / *run)
		}
	}
	var prios []int
	for p := range byClass {
		prios = append(prios, p)
	}
	sort.Ints(prios)
	for _, p := range prios {
		c := byClass[p]
		r.Classes = append(r.Classes, Class{Priority: p, Jobs: len(c.sim), Sim: dist(c.sim), Trace: dist(c.trace)})
	}
	r.RunRatio = dist(ratios)
	return r, nil
}

// taskType is a kind of job the run's workload holds, FGD's "task": how many
// GPUs it needs, its share of each in thousandths, the GPU models it may use
// (none: any) and its popularity, the fraction of the jobs of its kind.
type taskType struct {
	gpus, milli int
	models      []string
	p           float64
}

// taskTypes are the trace's task types, most popular first.
func taskTypes(t *workload.Trace) []taskType {
	count := map[string]int{}
	at := map[string]taskType{}
	for _, j := range t.Jobs {
		milli := 1000
		if j.Demand != nil && *j.Demand > 0 && *j.Demand < 1 {
			milli = max(1, int(math.Round(*j.Demand*1000)))
		}
		k := fmt.Sprintf("%d/%d/%s", j.GPUCount(), milli, strings.Join(j.GPUModels, "|"))
		count[k]++
		at[k] = taskType{gpus: j.GPUCount(), milli: milli, models: j.GPUModels}
	}
	var out []taskType
	for k, tt := range at {
		tt.p = float64(count[k]) / float64(len(t.Jobs))
		out = append(out, tt)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].p != out[j].p {
			return out[i].p > out[j].p
		}
		a, b := out[i], out[j]
		return fmt.Sprint(a.gpus, a.milli, a.models) < fmt.Sprint(b.gpus, b.milli, b.models)
	})
	return out
}

// Fragmentation is FGD's expected fragmentation of a node (Weng et al., "Beware
// of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient
// Descent", USENIX ATC '23, section 3; NodeGpuShareFragAmount in the authors'
// simulator, hkust-adsl/kubernetes-scheduler-simulator, pkg/utils/frag.go):
// the sum over the task types m of the workload of m's popularity times F_n(m),
// the node's free GPU (thousandths, per GPU in free) that m cannot use. A node
// m may not run on (its model not among m's) or cannot host m (fewer than m's
// GPUs with m's share free) has all its free GPU fragmented for m; one that can
// host m has fragmented the free GPU of its GPUs with less than m's share free.
// CPUs and host memory, which FGD also checks, are not modelled: every node
// has room enough for them.
func Fragmentation(free []int, model string, types []taskType) float64 {
	total := 0
	for _, f := range free {
		total += f
	}
	if total == 0 {
		return 0
	}
	frag := 0.0
	for _, m := range types {
		if len(m.models) > 0 && !slices.Contains(m.models, model) {
			frag += m.p * float64(total)
			continue
		}
		fits, small := 0, 0
		for _, f := range free {
			if f >= m.milli {
				fits++
			} else {
				small += f
			}
		}
		if fits >= m.gpus {
			frag += m.p * float64(small)
		} else {
			frag += m.p * float64(total)
		}
	}
	return frag
}
