package core

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Untouched counts the GPUs admissions fill before one reaches a GPU that
// holds a lane: the GPUs without one on its node, less what the waiting jobs
// may take, under least-loaded placement; unlimited where lanes are sealed;
// none under a placement that may join a lane while a GPU is empty
// (first-fit).
func TestUntouchedBoundsAdmissions(t *testing.T) {
	admitted := func(policy string, place GPUPlacement, jobs int, mib float64) *Scheduler {
		t.Helper()
		s, err := NewNode(mustPolicy(t, policy), Devices{Capacities: []float64{1000, 1000, 1000, 1000}, Placement: place})
		if err != nil {
			t.Fatal(err)
		}
		for i := range jobs {
			if err := s.Arrive(0, Job{ID: fmt.Sprint("j", i), Persistent: mib, Ephemeral: 100}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Decide(0); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct {
		policy string
		place  GPUPlacement
		jobs   int
		mib    float64
		want   int
	}{
		{"fifo", LeastLoaded{}, 2, 400, math.MaxInt}, // exclusive: sealed
		{"srtf", LeastLoaded{}, 0, 400, 4},
		{"srtf", LeastLoaded{}, 3, 400, 1},
		{"srtf", LeastLoaded{}, 9, 400, 0}, // a lane on every GPU, a job waits
		{"pack", LeastLoaded{}, 2, 400, 2},
		{"srtf", FirstFit{}, 1, 400, 0},           // first-fit joins GPU 0's lane first
		{"pack-defrag", LeastLoaded{}, 1, 400, 0}, // defragmentation regroups lanes
	} {
		s := admitted(c.policy, c.place, c.jobs, c.mib)
		if got := s.Untouched(0); got != c.want {
			t.Errorf("%s, %s, %d jobs: Untouched %d, want %d", c.policy, c.place.Name(), c.jobs, got, c.want)
		}
	}
}

// On a cluster, the bound is the GPUs without a lane on the GPU's own node:
// admissions fill those first whichever node each goes to.
func TestUntouchedIsPerNode(t *testing.T) {
	s, err := NewNode(mustPolicy(t, "srtf"), Devices{Capacities: []float64{1000, 1000, 1000, 2000, 2000, 2000}, Nodes: []Node{{Count: 3}, {Count: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := s.Arrive(0, Job{ID: fmt.Sprint("j", i), Persistent: 400, Ephemeral: 100}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Decide(0); err != nil {
		t.Fatal(err)
	}
	// first-fit node placement: both jobs on node 0, one GPU each.
	if got := s.Untouched(0); got != 1 {
		t.Errorf("node 0: Untouched %d, want 1 (3 GPUs, 2 with a lane)", got)
	}
	if got := s.Untouched(3); got != 3 {
		t.Errorf("node 1: Untouched %d, want 3", got)
	}
}

// On clusters of nodes of two models, one to four GPUs and two memory sizes,
// under the least-loaded node placement (and first-fit, where only the node's
// own GPUs count), once Untouched(g) reads b for a GPU g that holds a lane,
// no admission reaches g before the jobs arriving since (those of the
// instant included) have asked for b GPUs in all, as long as g's jobs stay:
// gangs, jobs that name a model, jobs that wait and jobs that leave
// meanwhile. Under least-loaded
// the empty nodes that take any job g's node takes add to the bound.
func TestUntouchedHoldsOnClusters(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	models := []string{"A", "B"}
	type watch struct{ g, bound, asked int }
	checked, beyondNode := 0, 0
	for trial := range 400 {
		var nodes []Node
		var caps []float64
		for range 2 + rng.IntN(6) {
			n := Node{Count: 1 + rng.IntN(4), Model: models[rng.IntN(2)]}
			capacity := []float64{1000, 2000}[rng.IntN(2)]
			for range n.Count {
				caps = append(caps, capacity)
			}
			nodes = append(nodes, n)
		}
		var place NodePlacement = LeastLoadedNode{}
		if trial%4 == 3 {
			place = FirstFitNode{}
		}
		s, err := NewNode(mustPolicy(t, []string{"srtf", "pack", "fair"}[trial%3]), Devices{Capacities: caps, Nodes: nodes, NodePlacement: place})
		if err != nil {
			t.Fatal(err)
		}
		var watches []watch
		var live []string
		now := time.Duration(0)
		for step := range 80 {
			now += time.Second
			if rng.IntN(3) > 0 || len(live) == 0 {
				j := Job{ID: fmt.Sprint("j", step), Persistent: 100 + 700*rng.Float64(), Ephemeral: 100, GPUs: 1}
				if rng.IntN(5) == 0 {
					j.GPUs = 2 + rng.IntN(2)
				}
				if rng.IntN(4) == 0 {
					j.GPUModels = []string{models[rng.IntN(2)]}
				}
				if s.Feasible(j) != nil {
					continue
				}
				if err := s.Arrive(now, j); err != nil {
					t.Fatal(err)
				}
				live = append(live, j.ID)
				for i := range watches {
					watches[i].asked += j.GPUs
				}
			} else {
				i := rng.IntN(len(live))
				// A watched GPU keeps its job (the simulator parks that job).
				gone := s.JobGPUs(live[i])
				watches = slices.DeleteFunc(watches, func(w watch) bool { return slices.Contains(gone, w.g) })
				if err := s.Leave(now, live[i]); err != nil {
					t.Fatal(err)
				}
				live = slices.Delete(live, i, i+1)
			}
			ds, err := s.Decide(now)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				if d.Action != Admit {
					continue
				}
				for _, w := range watches {
					if slices.Contains(d.GPUs, w.g) && w.asked < w.bound {
						t.Fatalf("trial %d, %s: %s admitted to GPU %d after %d GPUs asked, Untouched said %d", trial, place.Name(), d.Job, w.g, w.asked, w.bound)
					}
				}
			}
			if step%4 == 0 {
				watches = watches[:0]
				for _, g := range s.GPUs() {
					if len(g.Lanes) == 0 {
						continue
					}
					b := s.Untouched(g.Index)
					if b > 0 {
						watches = append(watches, watch{g: g.Index, bound: b})
						checked++
					}
					own := 0
					for _, h := range s.GPUs() {
						if s.nodeOf[h.Index] == s.nodeOf[g.Index] && len(h.Lanes) == 0 {
							own++
						}
					}
					if b > own {
						beyondNode++
					}
				}
			}
		}
	}
	if checked < 1000 || beyondNode < 100 {
		t.Errorf("%d bounds checked, %d past the GPUs of their own node; want 1,000 and 100", checked, beyondNode)
	}
	t.Logf("%d bounds checked, %d past the GPUs of their own node", checked, beyondNode)
}
