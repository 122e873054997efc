package core

import (
	"strings"
	"testing"
)

// A pinned job goes to its GPU only: it waits for that GPU even when another has
// room, and a job pinned to a GPU the node lacks, or one too small, is refused.
func TestPinnedJobGoesToItsGPU(t *testing.T) {
	s, err := NewNode(mustPolicy(t, "pack"), Devices{Capacities: []float64{10000, 10000}})
	if err != nil {
		t.Fatal(err)
	}
	admitted := func(id string) []int {
		t.Helper()
		if _, err := s.Decide(0); err != nil {
			t.Fatal(err)
		}
		return s.JobGPUs(id)
	}
	// Least-loaded would put b on GPU 1 beside a on GPU 0; pinned, it joins a.
	if err := s.Arrive(0, Job{ID: "a", Persistent: 3000, Ephemeral: 1000}); err != nil {
		t.Fatal(err)
	}
	if got := admitted("a"); len(got) != 1 || got[0] != 0 {
		t.Fatalf("a went to %v, want GPU 0", got)
	}
	if err := s.Arrive(0, Job{ID: "b", Persistent: 3000, Ephemeral: 1000, Pinned: []int{0}}); err != nil {
		t.Fatal(err)
	}
	if got := admitted("b"); len(got) != 1 || got[0] != 0 {
		t.Fatalf("b pinned to GPU 0 went to %v", got)
	}
	// GPU 0 is now full for a job this big: a pinned one waits though GPU 1 is empty.
	if err := s.Arrive(0, Job{ID: "c", Persistent: 5000, Ephemeral: 1000, Pinned: []int{0}}); err != nil {
		t.Fatal(err)
	}
	if got := admitted("c"); got != nil {
		t.Fatalf("c pinned to the full GPU 0 was admitted to %v", got)
	}
	// The same job unpinned is admitted to GPU 1 at once, past c.
	if err := s.Arrive(0, Job{ID: "d", Persistent: 5000, Ephemeral: 1000}); err != nil {
		t.Fatal(err)
	}
	if got := admitted("d"); len(got) != 1 || got[0] != 1 {
		t.Fatalf("d went to %v, want GPU 1", got)
	}
	if err := s.Leave(0, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Leave(0, "b"); err != nil {
		t.Fatal(err)
	}
	if got := admitted("c"); len(got) != 1 || got[0] != 0 {
		t.Fatalf("c went to %v once GPU 0 freed, want GPU 0", got)
	}

	for _, bad := range []struct {
		job  Job
		want string
	}{
		{Job{ID: "x", Persistent: 100, Pinned: []int{2}}, "pinned to GPU 2"},
		{Job{ID: "y", Persistent: 100, GPUs: 2, Pinned: []int{1}}, "pinned to 1"},
	} {
		err := s.Arrive(0, bad.job)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Arrive(%+v) = %v, want an error with %q", bad.job, err, bad.want)
		}
	}
}

// A job's own lane stops at its LaneCap (a claim's memory): pack's padding would
// take more; never below the job's peak, and the whole-GPU fallback is capped too.
func TestLaneCap(t *testing.T) {
	pack := mustPolicy(t, "pack")
	for _, c := range []struct {
		job  Job
		want float64
	}{
		{Job{ID: "padded", Persistent: 2000, Ephemeral: 3000}, (1.1*2000 + 3000) * 1.05},
		{Job{ID: "capped", Persistent: 2000, Ephemeral: 3000, LaneCap: 5100}, 5100},
		{Job{ID: "peak", Persistent: 2000, Ephemeral: 3000, LaneCap: 4000}, 5000},
		// Padded, 10000 MiB does not fit a 9800 MiB GPU: without a cap the job gets the
		// whole GPU; with one, the cap.
		{Job{ID: "whole", Persistent: 4000, Ephemeral: 5000}, 9800},
		{Job{ID: "whole-capped", Persistent: 4000, Ephemeral: 5000, LaneCap: 9500}, 9500},
	} {
		s := New(pack, 9800)
		if err := s.Arrive(0, c.job); err != nil {
			t.Fatal(err)
		}
		ds, err := s.Decide(0)
		if err != nil || len(ds) != 1 || ds[0].Action != Admit {
			t.Fatalf("%s: decisions %+v, %v", c.job.ID, ds, err)
		}
		if ds[0].LaneSize != c.want {
			t.Errorf("%s: lane of %v MiB, want %v", c.job.ID, ds[0].LaneSize, c.want)
		}
	}
}
