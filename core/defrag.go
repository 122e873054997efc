package core

// Lane defragmentation (Policy.Defrag: pack-defrag splits, pack-merge splits and
// merges), for Salus lanes (SalusLanes): lanes are
// memory accounting, so at an iteration boundary the lanes of a GPU may be split
// or merged without moving a byte: every job's persistent memory stays where it
// is; only which lane counts it changes. Only a lane with no iteration in flight
// (no job running, none between an iteration's end and its next request) changes,
// so one iteration at a time per lane holds throughout. The rule, at each Decide:
//
//  1. Split, before admission. A lane on one GPU whose jobs could each have the
//     lane SalusLanes gives a job alone (LaneSize) is split into those lanes: the
//     lane keeps its first job, the others get a new lane each, and every job keeps
//     its place in the ready queue of its lane. They could when the sizes add up to
//     at most the lane's size plus the GPU's unallocated memory, or, while a job
//     waits for admission, the lane's size alone (memory that a waiting job could
//     take is not spent on splitting). A lane of one job larger than its LaneSize
//     (its bigger companions left) shrinks to it: a split that returns the rest to
//     the GPU.
//  2. Merge, after admission, while a job waits. For the first waiting job on
//     one GPU in the order of admission (arrival, unless priorities or the
//     policy's order say otherwise; none while a starving gang job blocks
//     admission: admission.go), the smallest merge that makes it fit: two lanes
//     of one GPU become one, of their two sizes together (their jobs then take turns, as in any
//     lane), or one lane takes, of the GPU's unallocated memory, just what the job
//     needs beside its jobs (the rest stays free for others). Admission runs
//     again and places the job there.
//
// A split never takes memory a waiting job could have, and a merge happens only for
// a waiting job, so the two do not undo each other at one instant: a lane merged
// for an arrival splits again when memory frees and nothing waits. Memory stays
// within each GPU (a split spends at most the unallocated memory; a merge adds
// sizes), and every job's lane holds at least its peak: a lane split off is its
// job's LaneSize (above its peak), a merged lane holds what both held.

// Defrag is the action of a defragmentation: a split or a merge of lanes
// (Decision.Regroup says which). The lanes in Changed changed size, closed or
// opened; an engine logs their memory in that order (those that shrank or
// closed first, so the sum of the lanes never passes a GPU's memory in a log).
const Defrag Action = Start + 1

// Regroup is what a defragmentation did. Decision.Lane is the lane that stayed
// (split) or took the others (merge), Decision.LaneSize its new size.
type Regroup struct {
	// Kind is "split" or "merge".
	Kind string
	// Jobs moved between lanes: split, each to its own new lane, Lanes in the same
	// order; merge, from the lanes in Lanes (closed now) into Decision.Lane.
	Jobs  []string
	Lanes []int
	// Changed lists every lane whose memory changed, shrunk or closed first.
	Changed []int
}

// Defragmentation says which of the rules a policy applies to its Salus lanes.
type Defragmentation struct {
	Split bool // rule 1
	Merge bool // rule 2
}

// PackDefrag is pack with lanes split when their jobs could each have one (rule
// 1): the lanes a job joined for want of memory come apart when memory frees.
func init() {
	RegisterPolicyAt(30, PackDefrag)
	RegisterPolicyAt(31, PackMerge)
}

func PackDefrag() Policy { return withSplits(Pack(), "pack-defrag") }

// withSplits is p, named name, with its lanes split at an iteration boundary when
// their jobs could each have a lane of their own (rule 1).
func withSplits(p Policy, name string) Policy {
	p.Description = p.Name + ", with a lane split at an iteration boundary when its jobs could each have a lane of their own"
	p.Name = name
	p.Defrag = Defragmentation{Split: true}
	return p
}

// PackMerge is pack-defrag that also merges lanes so a waiting job fits (rules 1
// and 2). It admits jobs sooner, into lanes they time-share; on the generated
// traces it does worse than pack-defrag (docs/concepts.md).
func PackMerge() Policy {
	p := Pack()
	p.Name = "pack-merge"
	p.Description = "pack-defrag, and lanes merged at an iteration boundary so a waiting job fits"
	p.Defrag = Defragmentation{Split: true, Merge: true}
	return p
}

// defragOn is whether the policy defragments: it asks for it and its lanes are
// Salus lanes (a mode may put another placement in).
func (s *Scheduler) defragOn() bool {
	if !s.policy.Defrag.Split && !s.policy.Defrag.Merge {
		return false
	}
	_, salus := s.policy.Placement.(SalusLanes)
	return salus
}

// idleLane is whether l may change now: no iteration in flight, not a gang lane.
func idleLane(l *lane) bool { return l.holder == nil && !l.closed && l.live > 0 && len(l.gpus) == 1 }

// split applies rule 1 to every idle lane, in id order.
func (s *Scheduler) split(out []Decision) []Decision {
	var sizer SalusLanes
	for _, l := range s.lanes[:len(s.lanes):len(s.lanes)] {
		if !idleLane(l) {
			continue
		}
		if !s.splits(l) {
			continue
		}
		var jobs []*jobState
		l.each(func(js *jobState) { jobs = append(jobs, js) })
		d := Decision{Action: Defrag, Lane: l.id, GPUs: l.gpus, Regroup: &Regroup{Kind: "split", Changed: []int{l.id}}}
		l.size = sizer.LaneSize(jobs[0].job())
		l.reset(jobs[:1])
		s.refresh(l)
		for _, js := range jobs[1:] {
			n := s.newLane(sizer.LaneSize(js.job()), l.gpus)
			n.id = s.nextLane
			s.nextLane++
			s.lanes = append(s.lanes, n)
			s.laneByID[n.id] = n
			s.transfer(js, l, n)
			s.opened(n)
			d.Regroup.Jobs = append(d.Regroup.Jobs, js.id())
			d.Regroup.Lanes = append(d.Regroup.Lanes, n.id)
			d.Regroup.Changed = append(d.Regroup.Changed, n.id)
		}
		d.LaneSize = l.size
		d.After = s.after(d.Regroup.Changed...)
		s.needsAdmit, s.freed = true, true
		out = append(out, d)
	}
	return out
}

// splits says whether rule 1 splits lane l, idle: its jobs could each have
// a lane of their own within its size (and, while no job waits, its GPU's
// unallocated memory), or its one job's lane is larger than it needs.
func (s *Scheduler) splits(l *lane) bool {
	var sizer SalusLanes
	var need float64
	l.each(func(js *jobState) { need += sizer.LaneSize(js.job()) })
	avail := l.size
	if s.nWaiting == 0 {
		avail += s.freeOn(l.gpus[0])
	}
	return !(l.live == 1 && need >= l.size) && need <= avail
}

// couldMerge says whether a merge with lane l, idle, could let the first
// waiting job in (rule 2, as bestMerge weighs it): l grown into its GPU's
// unallocated memory, or l and another lane of its GPU, idle or not.
func (s *Scheduler) couldMerge(l *lane) bool {
	w := s.nextAdmitted()
	if w == nil {
		return false
	}
	j, x := w.job(), l.view
	if need := x.Persistent + j.Persistent + max(x.MaxEphemeral, j.Ephemeral) - x.Size; need > 0 && need <= s.freeOn(l.gpus[0]) {
		return true
	}
	for _, y := range s.lanes {
		if y != l && len(y.gpus) == 1 && y.gpus[0] == l.gpus[0] && !y.closed && y.live > 0 {
			merged := LaneInfo{Size: x.Size + y.view.Size, Persistent: x.Persistent + y.view.Persistent, MaxEphemeral: max(x.MaxEphemeral, y.view.MaxEphemeral)}
			if merged.Fits(j) {
				return true
			}
		}
	}
	return false
}

// merge applies rule 2: while a job waits and a merge lets it in, merge and admit.
func (s *Scheduler) merge(out []Decision) []Decision {
	for s.nWaiting > 0 {
		// The job admission places first once it fits (admission.go): a merge for
		// another would not admit it, and a split would undo the merge.
		w := s.nextAdmitted()
		if w == nil {
			return out
		}
		a, b, grow, ok := s.bestMerge(w.job())
		if !ok {
			return out
		}
		d := Decision{Action: Defrag, Lane: a.id, GPUs: a.gpus, Regroup: &Regroup{Kind: "merge"}}
		if b != nil {
			var moved []*jobState
			b.each(func(js *jobState) { moved = append(moved, js) })
			for _, js := range moved {
				s.transfer(js, b, a)
				d.Regroup.Jobs = append(d.Regroup.Jobs, js.id())
			}
			b.reset(nil)
			a.size += b.size
			d.Regroup.Lanes = []int{b.id}
			d.Regroup.Changed = []int{b.id}
			s.closeLane(b)
		} else {
			a.size += grow
		}
		s.refresh(a)
		d.LaneSize = a.size
		d.Regroup.Changed = append(d.Regroup.Changed, a.id)
		d.After = s.after(d.Regroup.Changed...)
		out = append(out, d)
		s.freed = true
		out = s.admit(out)
		if w.phase == waiting {
			// It fits the merged lane, so admission placed it; should a placement
			// decide otherwise, stop rather than merge without end.
			return out
		}
	}
	return out
}

// bestMerge is the smallest merge that makes j fit, GPUs and lanes in index and id
// order for ties: lanes a and b (b nil: a grows by the GPU's unallocated memory,
// grow MiB).
//
// The idle lanes are grouped by GPU in one pass over the lanes (in id order
// within a GPU), not looked for GPU by GPU: O(lanes + pairs on one GPU), where
// a cluster's hundreds of GPUs made every merge cost GPUs x lanes.
func (s *Scheduler) bestMerge(j Job) (a, b *lane, grow float64, ok bool) {
	best := 0.0
	byGPU := s.idleByGPU
	for g := range byGPU {
		byGPU[g] = byGPU[g][:0]
	}
	for _, l := range s.lanes {
		if idleLane(l) {
			for len(byGPU) <= l.gpus[0] {
				byGPU = append(byGPU, nil)
			}
			byGPU[l.gpus[0]] = append(byGPU[l.gpus[0]], l)
		}
	}
	s.idleByGPU = byGPU
	var infos []LaneInfo
	for g, idle := range byGPU {
		if len(idle) == 0 {
			continue
		}
		free := s.freeOn(g)
		infos = infos[:0]
		for _, l := range idle {
			infos = append(infos, l.view)
		}
		consider := func(x, y *lane, size, persistent, ephemeral, extra float64) {
			merged := LaneInfo{Size: size, Persistent: persistent, MaxEphemeral: ephemeral}
			if merged.Fits(j) && (!ok || size < best) {
				a, b, grow, ok, best = x, y, extra, true, size
			}
		}
		for i, x := range idle {
			xi := infos[i]
			// Only what j needs beside x's jobs: the rest stays free for others.
			if need := xi.Persistent + j.Persistent + max(xi.MaxEphemeral, j.Ephemeral) - xi.Size; need > 0 && need <= free {
				consider(x, nil, xi.Size+need, xi.Persistent, xi.MaxEphemeral, need)
			}
			for k := i + 1; k < len(idle); k++ {
				yi := infos[k]
				consider(x, idle[k], xi.Size+yi.Size, xi.Persistent+yi.Persistent, max(xi.MaxEphemeral, yi.MaxEphemeral), 0)
			}
		}
	}
	return a, b, grow, ok
}

// transfer gives js to lane to, with its place in the ready queue; the caller
// takes it out of from's jobs (reset).
func (s *Scheduler) transfer(js *jobState, from, to *lane) {
	if js.readyAt >= 0 {
		from.ready.take(js)
		to.ready.add(js)
		s.markDirty(to)
	}
	if from.last == js {
		from.last = nil
	}
	to.join(js)
	js.lane = to
}

// reset makes jobs the lane's jobs, in that order.
func (l *lane) reset(jobs []*jobState) {
	clear(l.jobs)
	l.jobs, l.live = l.jobs[:0], 0
	clear(l.peaks)
	l.maxPeak = 0
	for _, js := range jobs {
		l.join(js)
	}
}
