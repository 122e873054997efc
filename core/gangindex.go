package core

import (
	"math"
	"sort"
)

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
// (TestGangIndexIsTheWalk). An update is two binary searches and a move of
// the values between the old and the new (at most the node's GPU count of
// floats, 4 KiB on 512 GPUs; none when they are all either, as under
// exclusive GPUs).

// On a cluster, a gang that no node can take still had the nodes ordered and
// each asked: O(nodes) at each admission. So, from the first gang on, the
// scheduler also keeps for each count k of GPUs a tree over the nodes of
// their k-th largest free memory (the index per count): when the largest of
// them is below the smallest lane the gang would get on an empty GPU of any
// capacity, no node has k GPUs with room for it, and it is refused in O(1)
// without ordering the nodes. A node of GPUs of several capacities counts as
// having room (its lists are not merged): the test only ever refuses where
// every node would.

// freeList is the free memory of a node's GPUs of one capacity, ascending.
type freeList []float64

// move replaces one old by v, keeping the list sorted, and returns the
// positions whose values may have changed, lo to hi. Equal values are
// interchangeable: only those strictly between old and v move, so a GPU that
// turns from idle to full among many alike (exclusive) moves none.
func (f freeList) move(old, v float64) (lo, hi int) {
	if v > old {
		i := sort.Search(len(f), func(x int) bool { return f[x] > old }) - 1 // old's last
		j := sort.SearchFloat64s(f, v)
		copy(f[i:j-1], f[i+1:j])
		f[j-1] = v
		return i, j - 1
	}
	i := sort.SearchFloat64s(f, old) // old's first
	j := sort.Search(len(f), func(x int) bool { return f[x] > v })
	copy(f[j+1:i+1], f[j:i])
	f[j] = v
	return j, i
}

// kth is node n's k-th largest free memory of a GPU: -Inf when it has fewer
// than k GPUs, +Inf when they are of several capacities (see above).
func (n *nodeState) kth(k int) float64 {
	switch {
	case k > n.count || n.frees == nil:
		return math.Inf(-1)
	case len(n.frees) > 1:
		return math.Inf(1)
	}
	return n.frees[0][n.count-k]
}

// maxTree is a tournament tree of the nodes' values, the largest at the root.
type maxTree struct {
	v    []float64 // v[i] is the largest in node i's range; leaves from size
	size int
}

func newMaxTree(vals []float64) maxTree {
	size := 1
	for size < len(vals) {
		size *= 2
	}
	t := maxTree{v: make([]float64, 2*size), size: size}
	for i := range t.v {
		t.v[i] = math.Inf(-1)
	}
	copy(t.v[size:], vals)
	for i := size - 1; i >= 1; i-- {
		t.v[i] = max(t.v[2*i], t.v[2*i+1])
	}
	return t
}

// set gives leaf i the value x.
func (t maxTree) set(i int, x float64) {
	i += t.size
	if t.v[i] == x {
		return
	}
	t.v[i] = x
	for i /= 2; i >= 1; i /= 2 {
		t.v[i] = max(t.v[2*i], t.v[2*i+1])
	}
}

// indexCounts builds the trees per count of GPUs (byCount[k-2] for k = 2 up
// to the largest node's GPUs), at the first gang on a cluster.
func (s *Scheduler) indexCounts() {
	widest := 0
	for _, n := range s.nodes {
		widest = max(widest, n.count)
	}
	vals := make([]float64, len(s.nodes))
	for k := 2; k <= widest; k++ {
		for i := range s.nodes {
			vals[i] = s.nodes[i].kth(k)
		}
		s.byCount = append(s.byCount, newMaxTree(vals))
	}
}

// movedFree updates the trees per count after node ni's list of one
// capacity changed at positions lo to hi.
func (s *Scheduler) movedFree(ni, lo, hi int) {
	n := &s.nodes[ni]
	if len(n.frees) > 1 {
		return // +Inf, whatever its GPUs hold
	}
	for p := lo; p <= hi; p++ {
		if k := n.count - p; k >= 2 {
			s.byCount[k-2].set(ni, n.frees[0][p])
		}
	}
}

// noNodeTakes says whether no node has k GPUs with room for a lane of the
// gang j: true only where every node would refuse it.
func (s *Scheduler) noNodeTakes(j Job, k int) bool {
	if s.byCount == nil || s.naiveGangs || k-2 >= len(s.byCount) {
		return false
	}
	least := math.Inf(1)
	for _, c := range s.capacities {
		if where, ok := s.policy.Placement.Place(j, nil, c, c); ok && where.Lane < 0 {
			least = min(least, where.NewSize)
		}
	}
	return s.byCount[k-2].v[1] < least
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
