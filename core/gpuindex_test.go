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
// clusters of such nodes.
func TestIndexedPlacementIsTheSort(t *testing.T) {
	for _, name := range GPUPlacementNames() {
		gp, _ := LookupGPUPlacement(name)
		for _, policy := range []string{"fifo", "pack", "srtf"} {
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
				var live []string
				for step := range 400 {
					now := time.Duration(step) * time.Second
					if len(live) > 0 && rng.IntN(3) == 0 {
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
						if rng.IntN(5) == 0 {
							j.GPUs = 2
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
					if !reflect.DeepEqual(da, db) {
						t.Fatalf("%s %s seed %d step %d: indexed %v, sorted %v", name, policy, seed, step, da, db)
					}
				}
			}
		}
	}
}
