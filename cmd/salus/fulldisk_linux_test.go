package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/protocol"
)

// setFileLimit sets the file-size limit of process pid (RLIMIT_FSIZE, as
// `ulimit -f` does; 0: none): past it, the process's writes fail with EFBIG.
func setFileLimit(t *testing.T, pid int, bytes uint64) {
	t.Helper()
	lim := unix.Rlimit{Cur: bytes, Max: unix.RLIM_INFINITY}
	if bytes == 0 {
		lim.Cur = unix.RLIM_INFINITY
	}
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &lim, nil); err != nil {
		t.Skipf("cannot set the daemon's file-size limit: %v", err)
	}
}

// TestServeStopsWhileItsJournalCannotBeWritten: `salus serve --events` in a
// process of its own, whose file-size limit is then set just above its journal's
// size, as a full disk would stop it. The job iterating does not get its next
// iteration (its end is not in the journal), a new job is refused with
// journal_unavailable, and `salus get stats` says the journal is failing and
// why; once the limit is lifted the daemon resumes by itself, the job carries
// on, and the journal holds every iteration acknowledged and reads back whole.
func TestServeStopsWhileItsJournalCannotBeWritten(t *testing.T) {
	dir := t.TempDir()
	sock, api, events := filepath.Join(dir, "s.sock"), filepath.Join(dir, "api.sock"), filepath.Join(dir, "live.jsonl")
	admin := filepath.Join(dir, "admin-token")
	d := startDaemonProc(t, sock, "--policy", "fair", "--events", events, "--api-socket", api,
		"--token-file", filepath.Join(dir, "token"), "--admin-token-file", admin)
	stats := func() string {
		out, err := run(t, "get", "stats", "--addr", "unix:"+api, "--admin-token-file", admin)
		if err != nil {
			t.Fatalf("get stats: %v", err)
		}
		return out
	}
	ctx := context.Background()
	s, err := client.Open(ctx, "unix:"+sock, client.Options{Job: "a", PersistentMiB: 100, EphemeralMiB: 100})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := s.Next(0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if n := iterEnds(t, events); n != 3 {
		t.Fatalf("%d iteration ends in the journal, want 3", n)
	}
	fi, err := os.Stat(events)
	if err != nil {
		t.Fatal(err)
	}
	setFileLimit(t, d.cmd.Process.Pid, uint64(fi.Size())+20) // not the next iteration's end
	next := make(chan error, 1)
	go func() { next <- s.Next(0, 0) }()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stats(), "failing"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("get stats never said the journal is failing:\n%s\n%s", stats(), d.stderr.String())
		}
	}
	if out := stats(); !strings.Contains(out, "file too large") {
		t.Errorf("get stats does not say why:\n%s", out)
	}
	_, err = client.Open(ctx, "unix:"+sock, client.Options{Job: "b", PersistentMiB: 100, EphemeralMiB: 100})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != protocol.CodeJournal {
		t.Errorf("open while the journal cannot be written: %v, want code %s", err, protocol.CodeJournal)
	}
	select {
	case err := <-next:
		t.Fatalf("the next iteration was granted (%v) while its end is not in the journal (%d ends there)", err, iterEnds(t, events))
	default:
	}

	setFileLimit(t, d.cmd.Process.Pid, 0)
	select {
	case err := <-next:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the daemon did not resume once the journal could be written:\n%s", d.stderr.String())
	}
	if n := iterEnds(t, events); n != 4 {
		t.Errorf("%d iteration ends in the journal once resumed, want 4", n)
	}
	if out := stats(); !strings.Contains(out, "journal") || strings.Contains(out, "failing") {
		t.Errorf("get stats once resumed:\n%s", out)
	}
	s.End(0, 0)
	if err := s.Close(true); err != nil {
		t.Fatal(err)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.cmd.Wait(); err != nil {
		t.Fatalf("daemon: %v\n%s", err, d.stderr.String())
	}
	if !strings.Contains(d.stderr.String(), "cannot write the event log") || !strings.Contains(d.stderr.String(), "written again") {
		t.Errorf("the daemon's log does not say what happened:\n%s", d.stderr.String())
	}
	res, err := metrics.FromFile(events)
	if err != nil || res.Finished != 1 || iterEnds(t, events) != 5 {
		t.Errorf("journal: %+v, %v, %d iteration ends", res, err, iterEnds(t, events))
	}
	if err := eventlog.ReadFile(events, func(eventlog.Event) error { return nil }); err != nil {
		t.Error(err)
	}
}
