package main

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/salusgo/salus/eventlog"
)

// simulate --jobs writes every job's arrival, first service, end, JCT, queuing
// and GPUs without an event log; the log of stretches and the per-iteration one
// give the same lines, and both logs the same jobs' ends.
func TestSimulateJobsFile(t *testing.T) {
	dir := t.TempDir()
	read := func(name string, extra ...string) [][]string {
		path := filepath.Join(dir, name+".csv")
		args := append([]string{"simulate", "--policy", "pack", "--jobs", path}, extra...)
		if _, err := run(t, args...); err != nil {
			t.Fatal(err)
		}
		return readCSV(t, path)
	}
	plain := read("plain")
	if len(plain) != 101 {
		t.Fatalf("%d lines, want a header and 100 jobs", len(plain))
	}
	col := func(name string) int { return slices.Index(plain[0], name) }
	for _, name := range []string{"job_id", "arrival_s", "service_s", "end_s", "jct_s", "queuing_s", "gpus"} {
		if col(name) < 0 {
			t.Fatalf("no column %s in %v", name, plain[0])
		}
	}
	for _, r := range plain[1:] {
		a, _ := strconv.ParseFloat(r[col("arrival_s")], 64)
		s, _ := strconv.ParseFloat(r[col("service_s")], 64)
		e, _ := strconv.ParseFloat(r[col("end_s")], 64)
		if !(a <= s && s < e) || r[col("gpus")] != "1" {
			t.Fatalf("job %v: arrival, service and end out of order, or not on one GPU", r)
		}
	}
	stretches := filepath.Join(dir, "stretches.jsonl")
	perIter := filepath.Join(dir, "iterations.jsonl")
	if a, b := read("with-log", "--events", stretches), read("per-iteration", "--events", perIter, "--per-iteration"); !slices.EqualFunc(plain, a, slices.Equal) || !slices.EqualFunc(plain, b, slices.Equal) {
		t.Fatal("the jobs' lines depend on the event log's grain")
	}
	count := func(path string) (lines, stretch int) {
		if err := eventlog.ReadFile(path, func(e eventlog.Event) error {
			lines++
			if e.Kind == eventlog.Stretch {
				stretch++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return lines, stretch
	}
	n1, s1 := count(stretches)
	n2, s2 := count(perIter)
	if s1 == 0 || s2 != 0 || n1 >= n2 {
		t.Fatalf("%d events with %d stretches against %d per iteration with %d", n1, s1, n2, s2)
	}
}

// On many GPUs (a cluster of thousands) the table sums the GPUs up in a line
// instead of a line each; a few GPUs keep their lines.
func TestSimulateSumsManyGPUsUp(t *testing.T) {
	out, err := run(t, "simulate", "--policy", "pack", "--gpus", "32")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, " jobs, busy ") || !strings.Contains(out, "GPUs used") || !strings.Contains(out, " of 32 ") {
		t.Errorf("32 GPUs: want one summary line, no line a GPU:\n%s", out)
	}
	out, err = run(t, "simulate", "--policy", "pack", "--gpus", "4")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(out, " jobs, busy ") != 4 || strings.Contains(out, "GPUs used") {
		t.Errorf("4 GPUs: want a line each:\n%s", out)
	}
}
