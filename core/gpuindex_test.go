package core

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// sorted hides a built-in GPU placement's type: the scheduler then asks its
// Order over every GPU, the sort the indexes replace.
type sorted struct{ GPUPlacement }

// TestIndexedPlacementIsTheSort drives two schedulers with the same random
// arrivals and leaves, one placing by the index, the other by the sort, and
// requires the same decisions, on nodes of 2 to 40 GPUs of mixed sizes and on
// clusters of such nodes, with lanes split and merged too (pack-defrag,
// pack-merge: a merge that grows a lane must void the node's refusals).
func TestIndexedPlacementIsTheSort(t *testing.T) {
	for _, name := range GPUPlacementNames() {
		gp, _ := LookupGPUPlacement(name)
		for _, policy := range []string{"fifo", "pack", "srtf", "pack-merge", "pack-defrag"} {
			for seed := uint64(1); seed <= 6; seed++ {
				rng := rand.New(rand.NewPCG(seed, 9))
				n := 2 + rng.IntN(39)
				caps := make([]float64, n)
				for i := range caps {
					caps[i] = float64(8000 + 8000*rng.IntN(2))
				}
				var nodes []Node
				if seed%2 == 0 { // a cluster of nodes of 1 to 8 GPUs
					for left := n; left > 0; {
						k := min(left, 1+rng.IntN(8))
						nodes = append(nodes, Node{Count: k, Model: fmt.Sprint("m", len(nodes)%2)})
						left -= k
					}
				}
				p, _ := Lookup(policy)
				mk := func(g GPUPlacement) *Scheduler {
					s, err := NewNode(p, Devices{Capacities: caps, Placement: g, Nodes: nodes, NodePlacement: FGD{}})
					if err != nil {
						t.Fatal(err)
					}
					return s
				}
				a, b := mk(gp), mk(sorted{gp})
				twinSteps(t, rng, a, b, 400, 3, func() int {
					if rng.IntN(5) == 0 {
						return 2
					}
					return 1
				}, func(step int, da, db []Decision) {
					if !reflect.DeepEqual(da, db) {
						t.Fatalf("%s %s seed %d step %d: indexed %v, sorted %v", name, policy, seed, step, da, db)
					}
				})
			}
		}
	}
}

// BenchmarkPlacement is one placement decision on a node of 8, 64 and 8,192
// GPUs, half of them busy: a job leaves, another arrives and is admitted
// (go test ./core -run - -bench Placement). sorted= is the sort every GPU
// the indexes replace, for comparison.
func BenchmarkPlacement(b *testing.B) {
	for _, name := range GPUPlacementNames() {
		gp, _ := LookupGPUPlacement(name)
		for _, how := range []string{"indexed", "sorted"} {
			for _, n := range []int{8, 64, 8192} {
				b.Run(fmt.Sprintf("%s/%s/gpus=%d", name, how, n), func(b *testing.B) {
					g := gp
					if how == "sorted" {
						g = sorted{gp}
					}
					p, _ := Lookup("fifo")
					s, err := NewNode(p, Devices{Capacities: Uniform(n, 16000).Capacities, Placement: g})
					if err != nil {
						b.Fatal(err)
					}
					var live []string
					now := time.Duration(0)
					add := func(i int) {
						id := fmt.Sprint("j", i)
						if err := s.Arrive(now, Job{ID: id, Persistent: 1000, Ephemeral: 1000}); err != nil {
							b.Fatal(err)
						}
						if _, err := s.Decide(now); err != nil {
							b.Fatal(err)
						}
						live = append(live, id)
					}
					for i := range n / 2 {
						add(i)
					}
					b.ResetTimer()
					for i := range b.N {
						now += time.Second
						k := (i * 7919) % len(live)
						if err := s.Leave(now, live[k]); err != nil {
							b.Fatal(err)
						}
						live[k] = live[len(live)-1]
						live = live[:len(live)-1]
						add(n/2 + i)
					}
				})
			}
		}
	}
}

// twinSteps drives a and b, alike but for what a test compares, through the
// same random arrivals and leaves (one step in leaveOneIn a live job leaves,
// the others a job of gpus() GPUs arrives), deciding at each step, and hands
// each step's decisions to check. A job one refuses, the other must too.
func twinSteps(t *testing.T, rng *rand.Rand, a, b *Scheduler, steps, leaveOneIn int, gpus func() int, check func(step int, da, db []Decision)) {
	t.Helper()
	var live []string
	for step := range steps {
		now := time.Duration(step) * time.Second
		if len(live) > 0 && rng.IntN(leaveOneIn) == 0 {
			k := rng.IntN(len(live))
			id := live[k]
			live = append(live[:k], live[k+1:]...)
			for _, s := range []*Scheduler{a, b} {
				if err := s.Leave(now, id); err != nil {
					t.Fatal(err)
				}
			}
		} else {
			j := Job{ID: fmt.Sprint("j", step), Persistent: float64(500 + rng.IntN(4000)), Ephemeral: float64(rng.IntN(3000)), Declared: time.Duration(1+rng.IntN(100)) * time.Second}
			if g := gpus(); g > 1 {
				j.GPUs = g
			}
			if err := a.Arrive(now, j); err != nil {
				continue // not feasible: the same on both
			}
			if err := b.Arrive(now, j); err != nil {
				t.Fatal(err)
			}
			live = append(live, j.ID)
		}
		da, errA := a.Decide(now)
		db, errB := b.Decide(now)
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		check(step, da, db)
	}
}
