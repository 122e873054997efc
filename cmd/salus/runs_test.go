package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/provenance"
)

// A daemon started on an events file that holds a finished run (no session
// open to recover) is refused, naming the file and --continue-events, and
// writes nothing into it; with --continue-events it begins a run of its own
// (a run header with a new id), and salus report says the log holds two runs
// and reports each apart: one job each, not one run of two jobs whose
// makespan spans both and the gap.
func TestSecondDaemonRunOnAnEventsFile(t *testing.T) {
	dir := t.TempDir()
	sock, events := filepath.Join(dir, "s.sock"), filepath.Join(dir, "live.jsonl")
	job := func(name string) {
		t.Helper()
		s, err := client.Open(context.Background(), "unix:"+sock, client.Options{Job: name, PersistentMiB: 100, EphemeralMiB: 100})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Begin(); err != nil {
			t.Fatal(err)
		}
		if err := s.End(0, 0); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(true); err != nil {
			t.Fatal(err)
		}
	}
	stop := func(d *daemonProc) {
		t.Helper()
		d.cmd.Process.Signal(syscall.SIGTERM)
		if err := d.cmd.Wait(); err != nil {
			t.Fatalf("the daemon stopped with %v\n%s", err, d.stderr.String())
		}
	}
	args := []string{"--policy", "fair", "--events", events}
	a := startDaemonProc(t, sock, args...)
	job("first")
	stop(a)
	before, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}

	second := exec.Command(os.Args[0], append([]string{"serve", "--socket", sock, "--addr", "", "--fast-addr", ""}, args...)...)
	second.Env = append(os.Environ(), "SALUS_CMD_TEST_MAIN=1")
	msg, err := runWithin(second, time.Minute) // one not refused is killed there: its error names no flag
	if err == nil || !strings.Contains(msg, events) || !strings.Contains(msg, "--continue-events") {
		t.Errorf("a second daemon on a finished run's events file: %v\n%s\nwant it refused naming %s and --continue-events", err, msg, events)
	}
	if after, _ := os.ReadFile(events); string(after) != string(before) {
		t.Errorf("the refused daemon wrote into the log:\n%s", after[len(before):])
	}

	b := startDaemonProc(t, sock, append(args, "--continue-events")...)
	job("second")
	stop(b)
	ids := map[string]bool{}
	if err := eventlog.ReadFile(events, func(e eventlog.Event) error {
		if eventlog.BeginsRun(e) && e.RunInfo != nil {
			ids[e.RunInfo.ID] = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || ids[""] {
		t.Errorf("the log's runs have the ids %v; want two, each its own", ids)
	}

	outDir := filepath.Join(dir, "report")
	text, err := run(t, "report", events, "--out", outDir)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if !strings.Contains(text, events+" holds 2 runs") {
		t.Errorf("salus report does not say the log holds 2 runs:\n%s", text)
	}
	var res struct {
		Provenance provenance.Record `json:"provenance"`
		Runs       []struct {
			Jobs      int     `json:"jobs"`
			MakespanS float64 `json:"makespan_s"`
		} `json:"runs"`
	}
	b2, err := os.ReadFile(filepath.Join(outDir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b2, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2 || res.Runs[0].Jobs != 1 || res.Runs[1].Jobs != 1 {
		t.Errorf("salus report of a log of two runs: %+v; want two runs of one job each", res.Runs)
	}
	sum, err := provenance.FileSHA256(events)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Provenance.Logs) != 1 || res.Provenance.Logs[0].SHA256 != sum || len(res.Provenance.Command) < 2 || res.Provenance.Command[1] != "report" {
		t.Errorf("results.json's provenance %+v; want the command and the log's sha256 %s", res.Provenance, sum)
	}
}
