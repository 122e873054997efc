package eventlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// snapshotOf returns a snapshot of n open sessions.
func snapshotOf(t float64, n int) Event {
	open := make([]SessionState, n)
	for i := range open {
		open[i] = SessionState{Job: fmt.Sprintf("job-%06d", i), ArrivalS: float64(i) / 1000, Ended: i % 50}
	}
	return Event{T: t, Kind: Snapshot, Open: open}
}

// openAfterRestart is how many sessions a restart on path finds open, from its
// newest whole snapshot on.
func openAfterRestart(t *testing.T, path string) int {
	t.Helper()
	open := map[string]bool{}
	_, err := ReadFromSnapshot(path, func(e Event) error {
		switch e.Kind {
		case Snapshot:
			clear(open)
			for _, o := range e.Open {
				open[o.Job] = true
			}
		case Arrive:
			open[e.Job] = true
		case Finish, Lost:
			delete(open, e.Job)
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrTruncated) { // a cut line is warned of, and skipped
		t.Fatalf("a restart's reading: %v", err)
	}
	return len(open)
}

// A crash (kill -9) inside the write of a large snapshot never leaves a cut
// snapshot in force: at every point of the write, a restart finds every
// session the journal had open. And a journal an older daemon left with its
// newest file beginning with a cut snapshot is read from the snapshot before.
func TestCrashInsideASnapshotWriteLosesNoSession(t *testing.T) {
	const sessions = 20_000
	for _, frac := range []float64{0, 0.01, 0.5, 0.99} {
		dir := t.TempDir()
		path := filepath.Join(dir, "live.jsonl")
		a, err := OpenAppend(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Rotate(snapshotOf(1, sessions)); err != nil {
			t.Fatal(err)
		}
		a.TryEmit(Event{T: 2, Kind: IterEnd, Job: "job-000001", GPU: 0.1})
		func() {
			old := writeSnapshot
			defer func() { writeSnapshot = old; recover() }()
			writeSnapshot = func(f *os.File, line []byte) error {
				f.Write(line[:int(frac*float64(len(line)))])
				panic("killed") // the process dies here: nothing after runs
			}
			a.Rotate(snapshotOf(3, sessions))
		}()
		if got := openAfterRestart(t, path); got != sessions {
			t.Errorf("killed at %.0f%% of a snapshot's write: a restart finds %d sessions open, want %d", 100*frac, got, sessions)
		}
		a.f.Close()
	}

	// An older daemon's cut: the newest file begins with half a snapshot.
	dir := t.TempDir()
	path := filepath.Join(dir, "live.jsonl")
	a, err := OpenAppend(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Rotate(snapshotOf(1, sessions)); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if err := os.Rename(path, SegmentName(path, 2)); err != nil {
		t.Fatal(err)
	}
	line := Append(nil, snapshotOf(3, sessions))
	if err := os.WriteFile(path, line[:len(line)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if got := openAfterRestart(t, path); got != sessions {
		t.Errorf("a newest file that begins with a cut snapshot: a restart finds %d sessions open, want the %d of the snapshot before", got, sessions)
	}
}
