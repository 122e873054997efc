package core

import "slices"

// A refusal stands while memory only shrinks (Placement's rule): a GPU that
// refused a one-GPU job's class refuses it again until a job leaves one of its
// lanes, a lane opens or closes, a lane changes size (its free memory changes:
// a merge grows a lane from it), or its room grows. So when a
// class that a node refused is tried again, only the node's GPUs that may have
// freed memory since are asked, in the GPU placement's order: the others would
// refuse. Without this, every admission that fails on a full node of many GPUs
// (every leave, under a backlog) asked every GPU again. The walk is then over
// the GPUs freed since, not the GPUs of the node. Built-in GPU placements only
// (those with an index); gangs always walk the node, since a gang's refusal
// (fewer than k GPUs with room) does not stand for each GPU.

// freedAt is one entry of a node's log: GPU g may have freed memory at seq.
type freedAt struct {
	seq uint64
	g   int
}

// mayHaveFreed logs that GPU g of node n may have freed memory.
func (s *Scheduler) mayHaveFreed(n *nodeState, g int) {
	s.freeSeq++
	n.freed = append(n.freed, freedAt{s.freeSeq, g})
	if len(n.freed) > 4*n.count+64 {
		// Keep each GPU's last entry only, in order.
		seen := make(map[int]bool, n.count)
		kept := n.freed[:0]
		for i := len(n.freed) - 1; i >= 0; i-- {
			if e := n.freed[i]; !seen[e.g] {
				seen[e.g] = true
				kept = append(kept, e)
			}
		}
		slices.Reverse(kept)
		n.freed = kept
	}
}

// refused records that node ni refused class c's job now.
func (s *Scheduler) refused(c *waitClass, ni int) {
	if max(c.key.gpus, 1) > 1 {
		return
	}
	if c.refusedAt == nil {
		c.refusedAt = make([]uint64, len(s.nodes))
	}
	c.refusedAt[ni] = s.freeSeq
}

// walkFreed calls try, in the GPU placement's order, on the GPUs of node ni
// that may have freed memory since it last refused class c, until try returns
// true. It reports false when it cannot stand in for the whole walk: the node
// never refused the class, or so many GPUs freed since that walking the node
// costs less.
func (s *Scheduler) walkFreed(j Job, ni int, c *waitClass, try func(g int) bool) bool {
	if max(j.GPUs, 1) > 1 || c.refusedAt == nil || c.refusedAt[ni] == 0 {
		return false
	}
	n := &s.nodes[ni]
	at := c.refusedAt[ni]
	from, _ := slices.BinarySearchFunc(n.freed, at+1, func(e freedAt, seq uint64) int {
		switch {
		case e.seq < seq:
			return -1
		case e.seq > seq:
			return 1
		}
		return 0
	})
	since := n.freed[from:]
	if len(since) > n.count/4+1 {
		return false
	}
	gpus := make([]int, 0, len(since))
	for _, e := range since {
		if len(j.Pinned) == 0 || slices.Contains(j.Pinned, e.g) {
			gpus = append(gpus, e.g-n.first)
		}
	}
	slices.Sort(gpus)
	gpus = slices.Compact(gpus)
	x := n.index
	slices.SortFunc(gpus, func(a, b int) int {
		switch {
		case x.keys[a].less(x.keys[b]):
			return -1
		case x.keys[b].less(x.keys[a]):
			return 1
		}
		return a - b
	})
	for _, g := range gpus {
		if try(n.first + g) {
			return true
		}
	}
	return true
}
