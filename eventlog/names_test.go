package eventlog

import (
	"fmt"
	"testing"
)

// The tracker's table of names finds every job by name, the latest of a name
// that comes again, and nothing for a name it has not seen.
func TestNames(t *testing.T) {
	var x names
	if x.get("a") != nil {
		t.Fatal("an empty table found a job")
	}
	const n = 10000
	jobs := make([]*JobState, n)
	for i := range jobs {
		jobs[i] = &JobState{ID: fmt.Sprint("job-", i)}
		x.put(jobs[i])
	}
	again := &JobState{ID: "job-7"}
	x.put(again)
	jobs[7] = again
	for i, j := range jobs {
		if got := x.get(j.ID); got != j {
			t.Fatalf("job %d: found %p, want %p", i, got, j)
		}
	}
	if x.get("job-x") != nil {
		t.Error("found a job for a name never put")
	}
	seen := 0
	x.each(func(*JobState) { seen++ })
	if seen != n || x.n != n {
		t.Errorf("each saw %d jobs, the table counts %d, want %d", seen, x.n, n)
	}
	// At most three quarters full after a growth, at least three eighths: 8
	// bytes a slot, not a map's 24 and its control byte.
	if len(x.slots) > 8*n/3 {
		t.Errorf("%d slots for %d jobs", len(x.slots), n)
	}
}
