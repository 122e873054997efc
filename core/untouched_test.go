package core

import (
	"fmt"
	"math"
	"testing"
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
