package eventlog

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// A snapshot over 16 MiB (100,000 sessions with 200-byte names: the daemon's
// default --max-recovered) reads back, for a restart and for salus report
// (ReadFile) alike.
func TestSnapshotOver16MiBReadsBack(t *testing.T) {
	const sessions = 100_000
	dir := t.TempDir()
	path := filepath.Join(dir, "live.jsonl")
	a, err := OpenAppend(path)
	if err != nil {
		t.Fatal(err)
	}
	a.TryEmit(Event{Kind: Run, Engine: "live", Policy: "fair"})
	open := make([]SessionState, sessions)
	pad := strings.Repeat("n", 190)
	for i := range open {
		open[i] = SessionState{Job: fmt.Sprintf("%s%010d", pad, i), ArrivalS: float64(i) / 1000}
	}
	snap := Event{T: 1, Kind: Snapshot, Open: open}
	if n := len(Append(nil, snap)); n <= 16<<20 {
		t.Fatalf("the snapshot is %d bytes: the test wants one over 16 MiB", n)
	}
	if err := a.Rotate(snap); err != nil {
		t.Fatal(err)
	}
	a.TryEmit(Event{T: 2, Kind: Finish, Job: open[0].Job})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if got := openAfterRestart(t, path); got != sessions-1 {
		t.Errorf("a restart on a journal with a %d-session snapshot finds %d open, want %d", sessions, got, sessions-1)
	}
	n := 0
	if err := ReadFile(path, func(e Event) error {
		if e.Kind == Snapshot {
			n += len(e.Open)
		}
		return nil
	}); err != nil || n != sessions {
		t.Errorf("reading the whole journal (salus report's): %d sessions in its snapshot, %v", n, err)
	}
	if maxLine < 1<<30 {
		t.Errorf("a log's line may be %d bytes: want at least 1 GiB", maxLine)
	}
}

// A snapshot longer than a reader takes is not written: the rotation fails and
// the journal goes on in its file, which a restart reads whole.
func TestSnapshotLongerThanAReaderTakesIsNotWritten(t *testing.T) {
	old := maxLine
	maxLine = 1 << 10
	defer func() { maxLine = old }()
	path := filepath.Join(t.TempDir(), "live.jsonl")
	a, err := OpenAppend(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.TryEmit(Event{Kind: Arrive, Job: "a"})
	err = a.Rotate(snapshotOf(1, 100))
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("a snapshot over the readers' bound: %v; want the rotation refused", err)
	}
	if segs, _ := Segments(path); len(segs) != 0 {
		t.Errorf("the refused rotation left segments %v", segs)
	}
}
