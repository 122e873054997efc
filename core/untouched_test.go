package core

import (
	"fmt"
	"math"
	"testing"
)

// Untouched counts the GPUs admissions fill before one reaches a GPU that
// holds a lane: the GPUs without one, less what the waiting jobs may take,
// under least-loaded placement; unlimited where lanes are sealed; none under
// a placement that may join a lane while a GPU is empty (first-fit).
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
		if got := s.Untouched(); got != c.want {
			t.Errorf("%s, %s, %d jobs: Untouched %d, want %d", c.policy, c.place.Name(), c.jobs, got, c.want)
		}
	}
}
