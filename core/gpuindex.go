package core

// The built-in GPU placements (FirstFit, LeastLoaded, BestFit) order a node's
// GPUs by a key: the index, (jobs, free memory) or the room left. Rather than
// sort every GPU at each decision, the scheduler keeps each node's GPUs in a
// tournament tree by that key (ties to the lower index, as the sorts had them),
// updated when a GPU's lanes change. A decision walks the GPUs in order from
// the best, taking each out of the tree as the lane placement refuses it and
// putting them back after: O(log GPUs) for each GPU asked. The order is the
// sort's exactly: the keys are the very figures the sorts compared
// (TestPlacementResults pins it).

// gpuKey is a GPU's place in its placement's order: by a, then b, then index.
type gpuKey struct{ a, b float64 }

func (k gpuKey) less(o gpuKey) bool { return k.a < o.a || k.a == o.a && k.b < o.b }

// indexKey is the key of a built-in GPU placement; nil for any other, which is
// asked its Order over the node's GPUs as it is.
func indexKey(p GPUPlacement) func(GPUInfo) gpuKey {
	switch p.(type) {
	case FirstFit:
		return func(GPUInfo) gpuKey { return gpuKey{} }
	case LeastLoaded:
		// Fewest jobs, then most free memory: -free is exact.
		return func(g GPUInfo) gpuKey { return gpuKey{float64(g.Jobs), -g.Free} }
	case BestFit:
		return func(g GPUInfo) gpuKey { return gpuKey{g.Room(), 0} }
	}
	return nil
}

// gpuIndex is the tournament tree of one node's GPUs (local indices 0..n-1).
type gpuIndex struct {
	keys []gpuKey
	out  []bool // taken out for the walk in progress
	// tree[i] is the best GPU in node i's range, -1 when none; leaves from size.
	tree []int32
	size int
	// taken lists the GPUs the walk took out, to put back.
	taken []int
}

func newGPUIndex(n int) *gpuIndex {
	size := 1
	for size < n {
		size *= 2
	}
	x := &gpuIndex{keys: make([]gpuKey, n), out: make([]bool, n), tree: make([]int32, 2*size), size: size}
	for i := range x.tree {
		x.tree[i] = -1
	}
	for g := range n {
		x.tree[size+g] = int32(g)
	}
	for i := size - 1; i >= 1; i-- {
		x.tree[i] = x.better(x.tree[2*i], x.tree[2*i+1])
	}
	return x
}

// better is the one of GPUs a and b (or -1, none) that comes first.
func (x *gpuIndex) better(a, b int32) int32 {
	switch {
	case a < 0:
		return b
	case b < 0:
		return a
	case x.keys[b].less(x.keys[a]):
		return b
	case x.keys[a].less(x.keys[b]):
		return a
	}
	return min(a, b)
}

// fix recomputes the path from GPU g's leaf to the root.
func (x *gpuIndex) fix(g int) {
	i := x.size + g
	x.tree[i] = int32(g)
	if x.out[g] {
		x.tree[i] = -1
	}
	for i /= 2; i >= 1; i /= 2 {
		x.tree[i] = x.better(x.tree[2*i], x.tree[2*i+1])
	}
}

// set gives GPU g its key.
func (x *gpuIndex) set(g int, k gpuKey) {
	if x.keys[g] != k {
		x.keys[g] = k
		x.fix(g)
	}
}

// next takes the best GPU still in the tree out of it; -1 when none is left.
func (x *gpuIndex) next() int {
	g := int(x.tree[1])
	if g >= 0 {
		x.out[g] = true
		x.taken = append(x.taken, g)
		x.fix(g)
	}
	return g
}

// restore puts back the GPUs the walk took out.
func (x *gpuIndex) restore() {
	for _, g := range x.taken {
		x.out[g] = false
		x.fix(g)
	}
	x.taken = x.taken[:0]
}
