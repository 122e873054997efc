package core

import "time"

// Migration (Policy.Migrate, opt-in: ModeParams.Migrate, --migrate): what a
// single queue gives exclusive FIFO on several GPUs, a job that waits runs on
// the GPU that frees first, given to the sharing policies, whose jobs are bound
// to the GPU they were admitted on. After the lanes' starts at each Decide, a GPU
// of the node on which nothing runs (no iteration in flight, no job asking for
// one, in any of its lanes) takes a job that waits for its turn in a lane of
// another GPU of the same node: at its iteration boundary (it is ready: its last
// iteration ended, or it has not run yet), so that only its persistent memory
// moves (Gandiva's migration, cheap here because nothing of an iteration is in
// flight). The rule:
//
//   - the idle GPUs go in index order; for each, the source is the lane, on
//     one GPU of the same node with an iteration in flight, with the most ready
//     jobs (ties: the lowest id), whose first ready job (the one its policy
//     runs next) the policy's lane placement takes on the idle GPU, and that
//     job is not pinned elsewhere nor a gang;
//   - the job leaves its lane and joins (or opens) the lane the placement
//     chose on the idle GPU, ready, keeping its place in the policy's order;
//     the starts that follow in the same Decide run it there.
//
// The engine copies the job's persistent memory over the host link before its
// next iteration starts (Decision.CopyMiB; under suspend/resume none: a job
// that waits is in host memory already, and its swap-in pays the copy). A
// migration frees memory on the source GPU, so admission runs at the next
// Decide. A migration happens only at a Decide, where an idle GPU or a waiting
// job appears (a job leaves, yields, asks, is admitted): the boundaries that a
// simulator takes without the core (Continue) change neither, so they stay
// exact; Untouched gives no bound under migration (a GPU's job may leave for
// another's GPU).

// Migrate is the action of a migration: job Job left lane From for Lane on
// GPUs (a new lane when NewLane), ready to run there once CopyMiB is copied.
const Migrate Action = Defrag + 1

// MayMigrate says whether migration can act under p: where jobs take turns in
// a lane. An exclusive GPU or a process of its own (MPS, time-slicing) leaves no
// job waiting behind another in its lane.
func (p Policy) MayMigrate() bool {
	switch p.Placement.(type) {
	case Exclusive, PerProcess:
		return false
	}
	return true
}

// migrateOn is whether the policy migrates and the node has GPUs to migrate to.
func (s *Scheduler) migrateOn() bool { return s.policy.Migrate && len(s.gpus) > 1 }

// idleGPU says whether nothing runs on GPU g: no lane on it has an iteration in
// flight (a holder) or a ready job.
func (s *Scheduler) idleGPU(g int) bool {
	for _, li := range s.gv[g].lanes {
		l := s.laneByID[li.ID]
		if l.holder != nil || l.ready.Len() > 0 {
			return false
		}
	}
	return true
}

// migrate applies the rule, after the lanes' starts (dispatch): it moves the
// jobs and marks their new lanes dirty, for the caller's next dispatch.
func (s *Scheduler) migrate(out []Decision) []Decision {
	for g := range s.gpus {
		if !s.idleGPU(g) {
			continue
		}
		info := s.gpuInfo(g)
		var from *lane
		var where Where
		for _, l := range s.lanes {
			if len(l.gpus) != 1 || l.gpus[0] == g || l.closed || l.holder == nil || l.ready.Len() == 0 ||
				s.nodeOf[l.gpus[0]] != s.nodeOf[g] || (from != nil && l.ready.Len() <= from.ready.Len()) {
				continue
			}
			js := l.ready.first()
			j := js.job()
			if max(j.GPUs, 1) > 1 || len(j.Pinned) > 0 {
				continue
			}
			w, ok := s.policy.Placement.Place(j, info.Lanes, info.Free, info.Capacity)
			if !ok {
				continue
			}
			from, where = l, w
		}
		if from == nil {
			continue
		}
		out = s.move(from.ready.first(), from, g, where, out)
	}
	return out
}

// move moves ready job js from lane from to where on GPU g.
func (s *Scheduler) move(js *jobState, from *lane, g int, where Where, out []Decision) []Decision {
	from.ready.take(js)
	// Not from.leave, which marks the job as gone for good (members.go).
	var stay []*jobState
	from.each(func(o *jobState) {
		if o != js {
			stay = append(stay, o)
		}
	})
	from.reset(stay)
	if from.last == js {
		from.last = nil
	}
	s.refresh(from)
	var to *lane
	isNew := where.Lane < 0
	if isNew {
		to = s.newLane(where.NewSize, []int{g})
		to.join(js)
		to.id = s.nextLane
		s.nextLane++
		s.lanes = append(s.lanes, to)
		s.laneByID[to.id] = to
		s.opened(to)
	} else {
		to = s.lane(where.Lane)
		to.join(js)
		s.joined(to, js)
	}
	js.lane = to
	to.ready.add(js)
	s.markDirty(to)
	s.needsAdmit, s.freed = true, true
	copied := js.view.need.persistent
	if s.policy.Swapped {
		copied = 0
	}
	return append(out, Decision{Action: Migrate, Job: js.id(), Seq: js.view.Seq, Lane: to.id, LaneSize: to.size, NewLane: isNew,
		GPUs: to.gpus, From: from.id, FromGPU: from.gpus[0], CopyMiB: copied, After: s.after(from.id, to.id)})
}

// LeastWork tries first the GPU whose admitted jobs have the least GPU time
// left (declared less attained: GPUInfo.Work), then the one with the fewest
// jobs, the most free memory, the lowest index: the GPU that frees first, as
// a single queue would find it, where least-loaded counts jobs whatever their
// length. Jobs that declare no time count as none left.
type LeastWork struct{}

// Name is "least-work".
func (LeastWork) Name() string { return "least-work" }

// Order is by work left, then jobs, then free memory (most first), then index.
func (LeastWork) Order(_ Job, gpus []GPUInfo) []int {
	return sortedBy(gpus, func(a, b GPUInfo) int {
		if a.Work != b.Work {
			return compareFloat(float64(a.Work), float64(b.Work))
		}
		if a.Jobs != b.Jobs {
			return a.Jobs - b.Jobs
		}
		return compareFloat(b.Free, a.Free)
	})
}

// workOn is the GPU time the admitted jobs of GPU g's lanes have left: their
// declared time less what they attained, none below 0.
func (s *Scheduler) workOn(g int) time.Duration {
	var w time.Duration
	for _, li := range s.gv[g].lanes {
		s.laneByID[li.ID].each(func(js *jobState) { w += max(js.view.Remaining(), 0) })
	}
	return w
}

func init() { gpuPlacements["least-work"] = LeastWork{} }
