package core

import (
	"slices"
)

// The views placements see, kept up to date as lanes change rather than copied
// from every lane at each admission: an open costs the lanes it changes, not the
// lanes there are (beside 10,000 admitted idle jobs in lanes of their own, an
// open and the leave that closed its lane cost the core 3.5 ms; now 3 µs, as
// beside none: BenchmarkOpenBesideIdleLanes).
//
// The views must be exactly what computing them afresh gives, down to the last
// bit of every float, so that decisions do not change: a sum in floating point
// depends on its order. So the cheap updates are those that extend a sum in its
// own order: a job that joins a lane comes after its jobs (the lane's persistent
// sum gains one term at its end), and a lane that opens has the largest id (a
// GPU's free memory, its capacity minus its lanes' sizes in id order, loses one
// more term at its end). Anything else recomputes what it touched: a job leaving
// recomputes its lane's view from its jobs; a lane closing or changing size
// makes the GPU's free memory recompute, at its next use, the terms after it
// (the partial sums before it stand).

// gpuView is one GPU's lanes as placements see them.
type gpuView struct {
	lanes []LaneInfo // the lanes on the GPU, by id: their views
	sizes []float64  // their sizes, in the same order
	jobs  int        // the jobs of those lanes
	// prefix[k] is the capacity minus the first k sizes, subtracted in order:
	// prefix[len(sizes)] is the free memory. prefix[:valid] are up to date; a
	// lane that closes or changes size invalidates those after it only.
	prefix []float64
	valid  int
	// free, room, idle and seenJobs are as touch last saw them, for its
	// node's sums.
	free, room float64
	idle       bool
	seenJobs   int
	seenLanes  int
}

// laneAt is the position of lane id in v.lanes; false when it is not there.
func (v *gpuView) laneAt(id int) (int, bool) {
	return slices.BinarySearchFunc(v.lanes, id, func(l LaneInfo, id int) int { return l.ID - id })
}

// opened adds a lane that was just numbered (it has the largest id) and given
// its first jobs to the views of its GPUs.
func (s *Scheduler) opened(l *lane) {
	l.view = l.compute(s.policy.Swapped)
	for _, g := range l.gpus {
		v := &s.gv[g]
		v.lanes = append(v.lanes, l.view)
		v.sizes = append(v.sizes, l.size)
		v.jobs += l.view.Jobs
		n := len(v.prefix)
		v.prefix = append(v.prefix, 0)
		if v.valid == n {
			v.prefix[n] = v.prefix[n-1] - l.size // the next term of the sum, in its order
			v.valid++
		}
		s.touch(g)
	}
}

// joined updates the views of lane l, already in them, after js joined it
// (after its other jobs).
func (s *Scheduler) joined(l *lane, js *jobState) {
	nv := l.view
	nv.Jobs = l.live
	if b := l.biggest(); b != nil && b.view.need.persistent+b.view.need.ephemeral > 0 {
		nv.BiggestPersistent, nv.BiggestEphemeral = b.view.need.persistent, b.view.need.ephemeral
	}
	if s.policy.Swapped {
		nv.Persistent, nv.MaxEphemeral = nv.BiggestPersistent, nv.BiggestEphemeral
	} else {
		// compute's loop goes over the jobs in the order they joined: js is its
		// last term.
		nv.Persistent += js.view.need.persistent
		nv.MaxEphemeral = max(nv.MaxEphemeral, js.view.need.ephemeral)
	}
	s.setView(l, nv)
}

// refresh recomputes lane l's view after a change other than a job joining:
// a job left, its size or its jobs changed (defrag.go).
func (s *Scheduler) refresh(l *lane) { s.setView(l, l.compute(s.policy.Swapped)) }

// setView gives lane l the view nv, in the views of each of its GPUs.
func (s *Scheduler) setView(l *lane, nv LaneInfo) {
	old := l.view
	l.view = nv
	for _, g := range l.gpus {
		v := &s.gv[g]
		i, ok := v.laneAt(l.id)
		if !ok {
			panic("core: a lane missing from its GPU's views")
		}
		v.lanes[i] = nv
		v.jobs += nv.Jobs - old.Jobs
		if v.sizes[i] != nv.Size {
			v.sizes[i] = nv.Size
			v.valid = min(v.valid, i+1)
		}
		s.touch(g)
	}
}

// closed takes lane l out of the views of its GPUs.
func (s *Scheduler) closed(l *lane) {
	for _, g := range l.gpus {
		v := &s.gv[g]
		i, ok := v.laneAt(l.id)
		if !ok {
			continue
		}
		v.jobs -= v.lanes[i].Jobs
		v.lanes = slices.Delete(v.lanes, i, i+1)
		v.sizes = slices.Delete(v.sizes, i, i+1)
		v.prefix = slices.Delete(v.prefix, i+1, i+2)
		v.valid = min(v.valid, i+1)
		s.touch(g)
	}
	l.view = LaneInfo{}
}

// freeOn is GPU g's memory not allocated to any lane: its capacity minus its
// lanes' sizes, subtracted in lane id order.
func (s *Scheduler) freeOn(g int) float64 {
	v := &s.gv[g]
	for k := v.valid; k < len(v.prefix); k++ {
		v.prefix[k] = v.prefix[k-1] - v.sizes[k-1]
	}
	v.valid = len(v.prefix)
	return v.prefix[len(v.prefix)-1]
}

// gpuInfo is GPU g as placements see it. Its Lanes are the scheduler's own
// views: a placement must not modify or keep them (Placement says so).
func (s *Scheduler) gpuInfo(g int) GPUInfo {
	v := &s.gv[g]
	return GPUInfo{Index: g, Capacity: s.gpus[g], Free: s.freeOn(g), Lanes: v.lanes, Jobs: v.jobs}
}

// gpuInfos is every GPU as placements see it (gpuInfo).
func (s *Scheduler) gpuInfos() []GPUInfo {
	out := make([]GPUInfo, len(s.gpus))
	for g := range out {
		out[g] = s.gpuInfo(g)
	}
	return out
}

// nodeState is one node of the scheduler: its GPUs are first..first+count-1.
type nodeState struct {
	first, count int
	model        string
	// caps are its GPUs' distinct capacities, in the order they first come.
	caps []capCount
	// index orders its GPUs under a built-in GPU placement, by key (gpuindex.go);
	// nil under any other placement.
	index *gpuIndex
	key   func(GPUInfo) gpuKey
	// The sums of its GPUs' figures, kept by touch.
	idle, jobs int
	free, room float64
	// shape is its index in Scheduler.shapes, -1 where its GPUs are not of one
	// size; empty says it holds no job and no lane (counted in emptyOf);
	// modelOf is its model's index in Scheduler.nodeModels.
	shape   int
	empty   bool
	modelOf int
	// freed logs the GPUs whose memory may have been freed, in order
	// (refusals.go).
	freed []freedAt
	// frees are its GPUs' free memory, sorted, one list per capacity in caps
	// (gangindex.go); nil on a node of one GPU.
	frees []freeList
}

// capCount is how many GPUs of a node have one capacity.
type capCount struct {
	capacity float64
	n        int
}

// touch brings GPU g's place in its node's index, and the node's sums, up to
// date after its lanes changed.
func (s *Scheduler) touch(g int) {
	n := &s.nodes[s.nodeOf[g]]
	v := &s.gv[g]
	info := s.gpuInfo(g)
	idle, room := len(v.lanes) == 0, info.Room()
	if v.jobs < v.seenJobs || len(v.lanes) != v.seenLanes || info.Free != v.free || room > v.room {
		s.mayHaveFreed(n, g)
	}
	v.seenLanes = len(v.lanes)
	if n.index != nil {
		n.index.set(g-n.first, n.key(info))
	}
	if v.idle != idle {
		if idle {
			n.idle++
		} else {
			n.idle--
		}
		v.idle = idle
	}
	if n.frees != nil && info.Free != v.free {
		lo, hi := n.frees[s.capIndex(n, g)].move(v.free, info.Free)
		if s.byCount != nil {
			s.movedFree(int(s.nodeOf[g]), lo, hi)
		}
	}
	n.free += info.Free - v.free
	n.room += room - v.room
	v.free, v.room = info.Free, room
	n.jobs += v.jobs - v.seenJobs
	v.seenJobs = v.jobs
	if empty := n.jobs == 0 && n.idle == n.count; empty != n.empty && n.shape >= 0 {
		n.empty = empty
		if empty {
			s.emptyOf[n.shape]++
		} else {
			s.emptyOf[n.shape]--
		}
	}
}

// nodeShape is what a node offers any job: its GPUs' model, count and
// capacity (one for all).
type nodeShape struct {
	model    string
	count    int
	capacity float64
}

// shapeNodes gives each node of GPUs of one size its shape, and each shape
// the shapes whose nodes can take any job its nodes can (the same model, as
// many GPUs or more, as much memory or more).
func (s *Scheduler) shapeNodes() {
	for i := range s.nodes {
		n := &s.nodes[i]
		n.modelOf = slices.Index(s.nodeModels, n.model)
		if n.modelOf < 0 {
			n.modelOf = len(s.nodeModels)
			s.nodeModels = append(s.nodeModels, n.model)
		}
		n.shape = -1
		if n.count == 0 || len(n.caps) != 1 {
			continue
		}
		sh := nodeShape{n.model, n.count, n.caps[0].capacity}
		n.shape = slices.Index(s.shapes, sh)
		if n.shape < 0 {
			n.shape = len(s.shapes)
			s.shapes = append(s.shapes, sh)
		}
	}
	s.waitingFor = make([]int, len(s.nodeModels))
	s.emptyOf = make([]int, len(s.shapes))
	s.takesAll = make([][]int, len(s.shapes))
	for i, a := range s.shapes {
		for k, b := range s.shapes {
			if b.model == a.model && b.count >= a.count && b.capacity >= a.capacity {
				s.takesAll[i] = append(s.takesAll[i], k)
			}
		}
	}
}

// nodeInfo is node i as node placements see it.
func (s *Scheduler) nodeInfo(i int) NodeInfo {
	n := &s.nodes[i]
	return NodeInfo{Index: i, Model: n.model, GPUs: n.count, Idle: n.idle, Jobs: n.jobs, Free: n.free, Room: n.room}
}

// countWaiting adds d to the count of waiting jobs of each node model j
// allows.
func (s *Scheduler) countWaiting(j Job, d int) {
	for m, model := range s.nodeModels {
		if j.allows(model) {
			s.waitingFor[m] += d
		}
	}
}
