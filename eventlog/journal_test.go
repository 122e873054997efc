package eventlog

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"syscall"
	"testing"
)

// fullDisk is a file system that fills: writes succeed up to room bytes (the
// last one partly), then fail with ENOSPC until more room is made.
type fullDisk struct {
	mu     sync.Mutex
	b      bytes.Buffer
	room   int
	failed int
}

func (d *fullDisk) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := min(len(p), d.room)
	d.b.Write(p[:n])
	d.room -= n
	if n < len(p) {
		d.failed++
		return n, &os.PathError{Op: "write", Path: "journal", Err: syscall.ENOSPC}
	}
	return n, nil
}

func (d *fullDisk) grow(n int) {
	d.mu.Lock()
	d.room += n
	d.mu.Unlock()
}

func (d *fullDisk) events(t *testing.T) []Event {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Event
	err := Read(bytes.NewReader(d.b.Bytes()), "disk", func(e Event) error { out = append(out, e); return nil })
	if err != nil && !errors.Is(err, ErrTruncated) {
		t.Fatal(err)
	}
	return out
}

// An Appender on a full disk keeps what it could not write, says so, and writes
// it in order once there is room again: no event is lost or written twice, and
// a line a failed write cut is completed, not repeated. (eventlog.Writer stops at
// its first error, for good.)
func TestAppenderSurvivesAFullDisk(t *testing.T) {
	disk := &fullDisk{room: 100}
	a := NewAppender(disk)
	a.SetFlushEach(true)
	var want []Event
	var failed int
	for i := range 20 {
		e := Event{T: float64(i), Kind: Arrive, Job: fmt.Sprint("job", i)}
		want = append(want, e)
		if err := a.TryEmit(e); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("event %d: %v, want ENOSPC", i, err)
			}
			failed++
		}
	}
	if failed == 0 || a.Pending() == 0 || disk.failed == 0 {
		t.Fatalf("%d failures, %d bytes pending: the disk never filled", failed, a.Pending())
	}
	if got := disk.events(t); len(got) >= len(want) || !reflect.DeepEqual(got, want[:len(got)]) {
		t.Fatalf("while full, the disk holds %v: want a prefix of the events", got)
	}
	if err := a.Flush(); err == nil {
		t.Fatal("Flush on a full disk succeeded")
	}
	disk.grow(1 << 20)
	if err := a.Flush(); err != nil || a.Pending() != 0 {
		t.Fatalf("Flush once there is room: %v, %d bytes pending", err, a.Pending())
	}
	if err := a.TryEmit(Event{T: 20, Kind: Finish, Job: "job0"}); err != nil {
		t.Fatal(err)
	}
	want = append(want, Event{T: 20, Kind: Finish, Job: "job0"})
	if got := disk.events(t); !reflect.DeepEqual(got, want) {
		t.Errorf("after the disk had room again:\n got %v\nwant %v", got, want)
	}
}

// While it cannot write, an Appender keeps at most SetMaxPending bytes; the
// events beyond are dropped and counted.
func TestAppenderBoundsWhatItKeeps(t *testing.T) {
	disk := &fullDisk{}
	a := NewAppender(disk)
	a.SetFlushEach(true)
	a.SetMaxPending(1000)
	a.TryEmit(Event{Kind: Run})
	var dropped int
	for i := range 100 {
		if err := a.Queue(Event{T: float64(i), Kind: IterEnd, Job: "j"}); errors.Is(err, ErrPendingFull) {
			dropped++
		}
	}
	if a.Pending() > 1000 || dropped == 0 || a.Dropped() != int64(dropped) {
		t.Errorf("%d bytes kept, %d dropped (%d counted)", a.Pending(), dropped, a.Dropped())
	}
}

// writeRun emits events into a, rotating every few events with a snapshot, and
// returns them.
func writeRun(t *testing.T, a *Appender, rotate bool) []Event {
	t.Helper()
	var events []Event
	emit := func(e Event) {
		events = append(events, e)
		if err := a.TryEmit(e); err != nil {
			t.Fatal(err)
		}
	}
	emit(Event{Kind: Run, Engine: "live", Policy: "fair"})
	open := map[string]SessionState{}
	var order []string
	for i := range 30 {
		job := fmt.Sprint("j", i%5)
		tm := float64(i)
		switch {
		case i < 5:
			emit(Event{T: tm, Kind: Arrive, Job: job})
			open[job] = SessionState{Job: job, ArrivalS: tm}
			order = append(order, job)
		case i == 29:
			emit(Event{T: tm, Kind: Finish, Job: "j4"})
		default:
			emit(Event{T: tm, Kind: IterStart, Job: job})
			emit(Event{T: tm + 0.5, Kind: IterEnd, Job: job, GPU: 0.5})
		}
		if rotate && i%7 == 6 {
			var snap []SessionState
			for _, j := range order {
				snap = append(snap, open[j])
			}
			if err := a.Rotate(Event{T: tm + 0.5, Kind: Snapshot, Open: snap}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return events
}

// A rotated journal reads back as one log, the same events as one that never
// rotated, less the snapshots; a restart reads only the newest file from its
// snapshot on; and a crash in the middle of a rotation loses nothing.
func TestRotatedJournalReadsAsOneLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "live.jsonl")
	a, err := OpenAppend(path)
	if err != nil {
		t.Fatal(err)
	}
	a.SetFlushEach(true)
	want := writeRun(t, a, true)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	segs, err := Segments(path)
	if err != nil || len(segs) != 4 || segs[0] != path+".000001" || segs[3] != path+".000004" {
		t.Fatalf("segments %v, %v", segs, err)
	}
	var got []Event
	snaps := 0
	if err := ReadFile(path, func(e Event) error {
		if e.Kind == Snapshot {
			snaps++
		} else {
			got = append(got, e)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || snaps != 4 {
		t.Errorf("rotated journal read as %d events and %d snapshots, want the %d events written and 4 snapshots", len(got), snaps, len(want))
	}
	// A restart reads the active file alone, from its snapshot.
	var first Event
	n := 0
	read, err := ReadFromSnapshot(path, func(e Event) error {
		if n++; n == 1 {
			first = e
		}
		return nil
	})
	if err != nil || len(read) != 1 || read[0] != path || first.Kind != Snapshot || len(first.Open) != 5 {
		t.Errorf("restart read %v (%v), first event %+v", read, err, first)
	}
	// A crash after the rename, before the new file: the newest segment.
	os.Remove(path)
	if read, err := ReadFromSnapshot(path, func(Event) error { return nil }); err != nil || len(read) != 1 || read[0] != segs[3] {
		t.Errorf("without the active file, a restart read %v (%v), want %s", read, err, segs[3])
	}
	// A journal never rotated is read whole; so is an older daemon's.
	plain := filepath.Join(dir, "plain.jsonl")
	b, err := OpenAppend(plain)
	if err != nil {
		t.Fatal(err)
	}
	writeRun(t, b, false)
	b.Close()
	if read, err := ReadFromSnapshot(plain, func(Event) error { return nil }); err != nil || len(read) != 1 {
		t.Errorf("plain journal: read %v, %v", read, err)
	}
}

// Old segments may be compressed, or removed: what is left still reads, from the
// oldest segment's snapshot on.
func TestCompressedAndRemovedSegments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.jsonl")
	a, err := OpenAppend(path)
	if err != nil {
		t.Fatal(err)
	}
	want := writeRun(t, a, true)
	a.Close()
	segs, _ := Segments(path)
	raw, _ := os.ReadFile(segs[1])
	var z bytes.Buffer
	gz := gzip.NewWriter(&z)
	gz.Write(raw)
	gz.Close()
	os.WriteFile(segs[1]+".gz", z.Bytes(), 0o644)
	os.Remove(segs[1])
	var n int
	if err := ReadFile(path, func(e Event) error {
		if e.Kind != Snapshot {
			n++
		}
		return nil
	}); err != nil || n != len(want) {
		t.Errorf("with a compressed segment: %d events, %v; want %d", n, err, len(want))
	}
	os.Remove(segs[0])
	tr := NewTracker()
	if err := ReadFile(path, func(e Event) error { _, _, err := tr.Step(e); return err }); err != nil {
		t.Fatalf("without the first segment: %v", err)
	}
	if j := tr.Job("j0"); j == nil || j.Ended || j.ArrivalS != 0 {
		t.Errorf("j0 from the snapshot: %+v", j)
	}
}
