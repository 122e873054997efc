package core

import "sort"

// A gang that waits walked every GPU of its node at each admission to find
// that fewer than k of them had room: on one node of 512 GPUs with gangs of up
// to 128 waiting, exclusive fifo spent 88% of its time there, since every
// leave retries the gang at the head of the queue. So each node keeps the free
// memory of its GPUs sorted, one list per GPU capacity it has (a node of one
// model has one), updated by touch as a GPU's free memory changes: how many
// GPUs could take a gang's lane is a binary search per capacity, and a gang
// that cannot fit is refused in O(log GPUs) without a walk. The count is the
// walk's own test (a GPU takes a gang's rank when the lane it would get alone
// on an empty GPU of its capacity fits its free memory), so it refuses exactly
// where the walk would find fewer than k GPUs; when it does not refuse, the
// walk decides as before, and the decisions are the walk's
// (TestGangIndexIsTheWalk). An update is a binary search and a move of at
// most the node's GPU count of floats (4 KiB on 512 GPUs).

// freeList is the free memory of a node's GPUs of one capacity, ascending.
type freeList []float64

// move replaces one old by v, keeping the list sorted.
func (f freeList) move(old, v float64) {
	i := sort.SearchFloat64s(f, old) // old is there: touch saw it last
	j := sort.SearchFloat64s(f, v)
	switch {
	case j > i:
		// v goes after old: shift those between down by one.
		copy(f[i:j-1], f[i+1:j])
		f[j-1] = v
	default:
		copy(f[j+1:i+1], f[j:i])
		f[j] = v
	}
}

// atLeast is how many of the GPUs have at least size free.
func (f freeList) atLeast(size float64) int { return len(f) - sort.SearchFloat64s(f, size) }

// capIndex is the index in n.caps of GPU g's capacity.
func (s *Scheduler) capIndex(n *nodeState, g int) int {
	for i, c := range n.caps {
		if c.capacity == s.gpus[g] {
			return i
		}
	}
	panic("core: a GPU's capacity missing from its node's")
}

// gangMayFit says whether node n has k GPUs that could each take a rank of
// the gang j (a lane of its own with the size it would get on an empty GPU):
// false when the walk of placeOn would surely find fewer.
func (s *Scheduler) gangMayFit(j Job, n *nodeState, k int) bool {
	if n.frees == nil || s.naiveGangs {
		return true
	}
	fit := 0
	for i, c := range n.caps {
		where, ok := s.policy.Placement.Place(j, nil, c.capacity, c.capacity)
		if ok && where.Lane < 0 {
			fit += n.frees[i].atLeast(where.NewSize)
		}
	}
	return fit >= k
}
