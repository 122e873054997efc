//go:build unix

package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFailedStartLosesNothing: a daemon start that fails (a taken TCP port, a
// held socket path, an unknown --socket-group, a missing --api-socket folder, a
// bad --addr) leaves the journal exactly as it found it, byte for byte: no run
// header, no session logged lost. After six such failures in a row a good
// start restores the session a SIGTERM kept, and its client resumes it and
// finishes with every iteration of its loop run once.
func TestFailedStartLosesNothing(t *testing.T) {
	dir := t.TempDir()
	sock, events := filepath.Join(dir, "s.sock"), filepath.Join(dir, "live.jsonl")
	args := []string{"--policy", "fair", "--events", events, "--recover-window", "2m"}
	a := startDaemonProc(t, sock, args...)
	const iters = 60
	job := startTraining(sock, iters)
	deadline := time.Now().Add(time.Minute)
	for iterEnds(t, events) < 10 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Wait(); err != nil {
		t.Fatalf("the daemon stopped with %v\n%s", err, a.stderr.String())
	}
	before, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	held := filepath.Join(dir, "held.sock")
	hl, err := net.Listen("unix", held)
	if err != nil {
		t.Fatal(err)
	}
	defer hl.Close()
	go func() { // answer, as a live daemon would
		for {
			c, err := hl.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	bad := filepath.Join(dir, "bad.sock") // never the clients' socket
	causes := []struct {
		name  string
		flags []string
	}{
		{"the fast path's TCP port taken", []string{"--socket", bad, "--fast-addr", taken.Addr().String()}},
		{"the API's TCP port taken", []string{"--socket", bad, "--addr", taken.Addr().String()}},
		{"the socket path held by a live daemon", []string{"--socket", held}},
		{"an unknown --socket-group", []string{"--socket", bad, "--socket-group", "no-such-group-of-salus"}},
		{"a missing --api-socket folder", []string{"--socket", bad, "--api-socket", filepath.Join(dir, "missing", "api.sock")}},
		{"a bad --addr", []string{"--socket", bad, "--addr", "not-an-address"}},
	}
	for _, c := range causes {
		cmd := exec.Command(os.Args[0], append(append([]string{"serve", "--addr", "", "--fast-addr", ""}, args...), c.flags...)...)
		cmd.Env = append(os.Environ(), "SALUS_CMD_TEST_MAIN=1")
		out, err := runWithin(cmd, time.Minute)
		if err == nil {
			t.Fatalf("%s: the daemon started:\n%s", c.name, out)
		}
		after, _ := os.ReadFile(events)
		if string(after) != string(before) {
			t.Fatalf("%s: the failed start wrote into the journal:\n%s\nits output:\n%s", c.name, after[min(len(before), len(after)):], out)
		}
		if _, err := os.Stat(bad); err == nil {
			t.Errorf("%s: the failed start left its socket %s behind", c.name, bad)
		}
	}

	b := startDaemonProc(t, sock, args...)
	job.resumesAndFinishes(t, b, events, iters, "the good start")
}
