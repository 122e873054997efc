package core

import (
	"testing"
	"unsafe"
)

// A job's state in the scheduler stays within 128 bytes (an allocation of
// that size class): at a million jobs, 750,000 of them wait at once, and
// their state was 288 bytes each while it held a copy of its Job. Jobs of a
// need share it (TestFinishedJobsAreNotHeld checks they drop it too).
func TestJobStateSize(t *testing.T) {
	if n := unsafe.Sizeof(jobState{}); n > 128 {
		t.Errorf("jobState takes %d bytes, want at most 128", n)
	}
}

// A job rebuilt from its state is the job that arrived, but for its share,
// which is the one it is scheduled with.
func TestJobRebuilt(t *testing.T) {
	s := New(FIFO(), 14000)
	in := []Job{
		{ID: "a", Arrival: 3, Persistent: 100, Ephemeral: 50, Declared: 7, Priority: 2, GPUs: 1, LaneCap: 400, Share: 2},
		{ID: "b", Persistent: 100, Ephemeral: 50, LaneCap: 400}, // shares a's need but for GPUs
		{ID: "c", Persistent: 100, Ephemeral: 50, Pinned: []int{0}},
	}
	for _, j := range in {
		if err := s.Arrive(0, j); err != nil {
			t.Fatal(err)
		}
	}
	for _, j := range in {
		got := s.jobs[j.ID].job()
		j.Share = ShareOf(j)
		if got.ID != j.ID || got.Arrival != j.Arrival || got.Persistent != j.Persistent || got.Ephemeral != j.Ephemeral ||
			got.Declared != j.Declared || got.Priority != j.Priority || got.GPUs != j.GPUs || got.LaneCap != j.LaneCap ||
			got.Share != j.Share || len(got.Pinned) != len(j.Pinned) || len(got.GPUModels) != len(j.GPUModels) {
			t.Errorf("job %s rebuilt as %+v, arrived as %+v", j.ID, got, j)
		}
	}
	if len(s.needs) != 2 {
		t.Errorf("%d needs shared, want 2 (a's and b's; c's, pinned, is its own)", len(s.needs))
	}
}
