package core

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// The nodes' free lists, and on a cluster the trees per count, refuse a gang
// exactly where the walk of every GPU would: on random nodes and clusters (GPUs of two sizes, gangs of 2 to 12
// beside one-GPU jobs, jobs leaving at random), a scheduler with the lists
// and one without them (naiveGangs) make the same decisions at every step,
// each node's lists hold its GPUs' free memory, sorted, and each tree per
// count k holds each node's k-th largest.
func TestGangIndexIsTheWalk(t *testing.T) {
	exclusive, err := Compose(ModeExclusive, "fifo", DefaultModeParams())
	if err != nil {
		t.Fatal(err)
	}
	policies := map[string]Policy{"exclusive/fifo": exclusive}
	for _, name := range []string{"fifo", "pack", "srtf", "pack-merge", "pack-defrag"} {
		policies[name], _ = Lookup(name)
	}
	for name, p := range policies {
		for _, np := range []NodePlacement{FirstFitNode{}, FGD{}} {
			for seed := uint64(1); seed <= 6; seed++ {
				rng := rand.New(rand.NewPCG(seed, 47))
				n := 8 + rng.IntN(57)
				caps := make([]float64, n)
				for i := range caps {
					caps[i] = float64(8000 + 8000*rng.IntN(2))
				}
				var nodes []Node
				if seed%2 == 0 { // a cluster of nodes of 1 to 16 GPUs, most of one size
					for left := n; left > 0; {
						k := min(left, 1+rng.IntN(16))
						if rng.IntN(4) > 0 {
							c := caps[n-left]
							for g := n - left; g < n-left+k; g++ {
								caps[g] = c
							}
						}
						nodes = append(nodes, Node{Count: k})
						left -= k
					}
				}
				mk := func(naive bool) *Scheduler {
					s, err := NewNode(p, Devices{Capacities: caps, Nodes: nodes, NodePlacement: np})
					if err != nil {
						t.Fatal(err)
					}
					s.naiveGangs = naive
					return s
				}
				a, b := mk(false), mk(true)
				twinSteps(t, rng, a, b, 600, 2, func() int {
					if rng.IntN(3) == 0 {
						return 2 + rng.IntN(11)
					}
					return 1
				}, func(step int, da, db []Decision) {
					if !reflect.DeepEqual(da, db) {
						t.Fatalf("%s %s seed %d step %d: with the lists %v, walking %v", name, np.Name(), seed, step, da, db)
					}
					checkFreeLists(t, a)
				})
			}
		}
	}
}

// checkFreeLists fails t unless each node's free lists are its GPUs' free
// memory, by capacity, sorted.
func checkFreeLists(t *testing.T, s *Scheduler) {
	t.Helper()
	for ni := range s.nodes {
		n := &s.nodes[ni]
		if n.frees == nil {
			continue
		}
		for i, c := range n.caps {
			var want []float64
			for g := n.first; g < n.first+n.count; g++ {
				if s.gpus[g] == c.capacity {
					want = append(want, s.freeOn(g))
				}
			}
			slices.Sort(want)
			if !slices.Equal([]float64(n.frees[i]), want) {
				t.Fatalf("node %d, GPUs of %v MiB: free lists %v, GPUs' free memory %v", ni, c.capacity, n.frees[i], want)
			}
		}
	}
	for k := 2; k-2 < len(s.byCount); k++ {
		tree := s.byCount[k-2]
		best := math.Inf(-1)
		for ni := range s.nodes {
			if got, want := tree.v[tree.size+ni], s.nodes[ni].kth(k); got != want {
				t.Fatalf("node %d's %d-th largest free memory is %v in the tree, %v on the node", ni, k, got, want)
			}
			best = max(best, s.nodes[ni].kth(k))
		}
		if tree.v[1] != best {
			t.Fatalf("the tree of %d GPUs has %v at its root, want %v", k, tree.v[1], best)
		}
	}
}

// A free list stays the sorted free memory of its GPUs through random moves,
// and each move says every position whose value changed.
func TestFreeListMove(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 47))
	for range 200 {
		gpus := make([]float64, 1+rng.IntN(20))
		f := make(freeList, len(gpus)) // all 0, as at NewNode
		for range 100 {
			g, v := rng.IntN(len(gpus)), float64(rng.IntN(5)*1000)
			if v == gpus[g] {
				continue
			}
			before := slices.Clone(f)
			lo, hi := f.move(gpus[g], v)
			gpus[g] = v
			want := slices.Sorted(slices.Values(gpus))
			if !slices.Equal([]float64(f), want) {
				t.Fatalf("list %v after a move, want %v", f, want)
			}
			for p := range f {
				if (p < lo || p > hi) && f[p] != before[p] {
					t.Fatalf("position %d changed (%v to %v) outside %d to %d", p, before[p], f[p], lo, hi)
				}
			}
		}
	}
}
