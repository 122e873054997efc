//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Two daemons, one journal: the second salus serve on another socket but the
// same --events file is refused, naming the file and the daemon that holds it,
// and writes nothing into it; once the first has stopped the journal is free.
func TestSecondDaemonOnOneJournalIsRefused(t *testing.T) {
	dir := t.TempDir()
	events := filepath.Join(dir, "live.jsonl")
	a := startDaemonProc(t, filepath.Join(dir, "a.sock"), "--events", events)
	before, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	second := exec.Command(os.Args[0], "serve", "--socket", filepath.Join(dir, "b.sock"), "--addr", "", "--fast-addr", "", "--events", events)
	second.Env = append(os.Environ(), "SALUS_CMD_TEST_MAIN=1")
	msg, err := runWithin(second, time.Minute) // a second daemon not refused is killed there: its error names no journal
	if err == nil || !strings.Contains(msg, events) || !strings.Contains(msg, "pid "+strconv.Itoa(a.cmd.Process.Pid)) {
		t.Errorf("the second daemon on the same journal: %v\n%s\nwant it refused naming %s and pid %d", err, msg, events, a.cmd.Process.Pid)
	}
	if after, _ := os.ReadFile(events); string(after) != string(before) {
		t.Errorf("the refused daemon wrote into the journal:\n%s", after[len(before):])
	}
	a.cmd.Process.Kill()
	a.cmd.Wait()
	b := startDaemonProc(t, filepath.Join(dir, "b.sock"), "--events", events, "--continue-events") // the kill let the lock go; the log holds a run with no session open
	b.cmd.Process.Kill()
	b.cmd.Wait()
}

// The journal lock goes by the file, not by its name: a second daemon on the
// journal through a symbolic link, or through a hard link, is refused too, and
// writes nothing into it.
func TestSecondDaemonThroughALinkIsRefused(t *testing.T) {
	dir := t.TempDir()
	events := filepath.Join(dir, "live.jsonl")
	a := startDaemonProc(t, filepath.Join(dir, "a.sock"), "--events", events)
	other := t.TempDir()
	sym, hard := filepath.Join(other, "sym.jsonl"), filepath.Join(other, "hard.jsonl")
	if err := os.Symlink(events, sym); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(events, hard); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{sym, hard} {
		second := exec.Command(os.Args[0], "serve", "--socket", filepath.Join(other, "b.sock"), "--addr", "", "--fast-addr", "", "--events", link, "--continue-events")
		second.Env = append(os.Environ(), "SALUS_CMD_TEST_MAIN=1")
		out, err := runWithin(second, time.Minute)
		if err == nil || !strings.Contains(out, "in use") {
			t.Errorf("a second daemon on the journal through %s: %v\n%s\nwant it refused, the journal in use", link, err, out)
		}
		if after, _ := os.ReadFile(events); string(after) != string(before) {
			t.Errorf("the daemon through %s wrote into the journal:\n%s", link, after[len(before):])
		}
	}
	a.cmd.Process.Kill()
	a.cmd.Wait()
}

// A refused daemon quotes at most 200 bytes of the lock file, however large it
// has grown (one of 50 MB was once printed whole).
func TestRefusedDaemonQuotesLittleOfTheLock(t *testing.T) {
	dir := t.TempDir()
	events := filepath.Join(dir, "live.jsonl")
	a := startDaemonProc(t, filepath.Join(dir, "a.sock"), "--events", events)
	f, err := os.OpenFile(events+".lock", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	const big = 4 << 20
	if _, err := f.Write([]byte(strings.Repeat("x", big))); err != nil {
		t.Fatal(err)
	}
	f.Close()
	second := exec.Command(os.Args[0], "serve", "--socket", filepath.Join(dir, "b.sock"), "--addr", "", "--fast-addr", "", "--events", events)
	second.Env = append(os.Environ(), "SALUS_CMD_TEST_MAIN=1")
	out, err := runWithin(second, time.Minute)
	if err == nil || !strings.Contains(out, "in use") {
		t.Errorf("a second daemon on the journal: %v\n%.2000s\nwant it refused, the journal in use", err, out)
	}
	if strings.Contains(out, strings.Repeat("x", 201)) || len(out) > 4096 {
		t.Errorf("the refusal is %d bytes long, from a lock file of %d: want at most 200 of it quoted", len(out), big)
	}
	a.cmd.Process.Kill()
	a.cmd.Wait()
}
