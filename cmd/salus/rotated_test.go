package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/server"
)

// rotate writes the log at path again as a daemon's journal rotated every
// rotateAt bytes, each new file beginning with a snapshot of the open sessions,
// and returns its path.
func rotate(t *testing.T, path string, rotateAt int64) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "journal.jsonl")
	a, err := eventlog.OpenAppend(out)
	if err != nil {
		t.Fatal(err)
	}
	open := server.NewJournal()
	if err := eventlog.ReadFile(path, func(e eventlog.Event) error {
		if err := a.TryEmit(e); err != nil {
			return err
		}
		open.Emit(e)
		if a.SinceRotation() >= rotateAt {
			return a.Rotate(eventlog.Event{T: open.LastS, Kind: eventlog.Snapshot, Open: open.States()})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if segs, _ := eventlog.Segments(out); len(segs) < 3 {
		t.Fatalf("%d segments: rotate more often", len(segs))
	}
	return out
}

// salus report, report --out and trace from-log read a rotated journal as one
// run: the same figures as from the log never rotated.
func TestReportReadsARotatedJournal(t *testing.T) {
	dir := t.TempDir()
	events := filepath.Join(dir, "events.jsonl")
	if _, err := run(t, "simulate", "--trace", "../../examples/own-trace.csv", "--catalog", "../../examples/catalog.yaml",
		"--policy", "fair", "--events", events, "-o", "json"); err != nil {
		t.Fatal(err)
	}
	rotated := rotate(t, events, 4096)
	want, err := run(t, "report", events, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := run(t, "report", rotated, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if makespan(t, got) != makespan(t, want) {
		t.Errorf("report of the rotated journal: makespan %v, of the plain log %v", makespan(t, got), makespan(t, want))
	}
	if _, err := run(t, "report", rotated, "--out", filepath.Join(dir, "rep")); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv")
	if _, err := run(t, "trace", "from-log", events, "--out", a); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "trace", "from-log", rotated, "--out", b); err != nil {
		t.Fatal(err)
	}
	ta, _ := os.ReadFile(a)
	tb, _ := os.ReadFile(b)
	if string(ta) != string(tb) {
		t.Errorf("trace from-log differs:\n%s\n%s", ta, tb)
	}
}
