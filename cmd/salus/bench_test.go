package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/bench"
	"github.com/salusgo/salus/core"
)

// benchRun runs salus bench with its measuring children being this test binary
// acting as salus (TestMain).
func benchRun(t *testing.T, args ...string) (string, error) {
	t.Helper()
	t.Setenv("SALUS_CMD_TEST_MAIN", "1")
	return run(t, append([]string{"bench"}, args...)...)
}

// TestBenchPrintsARowPerSizeAndScheme: the table has a row per size and scheme,
// each with its figures.
func TestBenchPrintsARowPerSizeAndScheme(t *testing.T) {
	out, err := benchRun(t, "--jobs", "20,40", "--policy", "fifo,pack")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 12 || (f[0] != "20" && f[0] != "40") {
			continue
		}
		rows[f[0]+" "+f[1]] = true
		// Pack's lanes switch beside each other; exclusive fifo's never do.
		if switches := f[8]; (f[1] == "pack") == (switches == "0") {
			t.Errorf("row %q: %s switches", line, switches)
		}
		// Wall seconds (three decimals) and the heap allocated in MiB may round to
		// 0 on such small runs: the loop allocates nothing per iteration.
		for _, v := range []string{f[2], f[3], f[5], f[6], f[7], f[10]} {
			if v == "0" || v == "0.000" || strings.HasPrefix(v, "-") {
				t.Errorf("row %q: a figure is not positive: %q", line, v)
			}
		}
	}
	for _, want := range []string{"20 fifo", "20 pack", "40 fifo", "40 pack"} {
		if !rows[want] {
			t.Errorf("no row for %s:\n%s", want, out)
		}
	}
}

// TestBenchJSON: every run's fields are there, with positive counts, and the
// same trace has the same iterations under every scheme.
func TestBenchJSON(t *testing.T) {
	dir := t.TempDir()
	out, err := benchRun(t, "--jobs", "20", "--policy", "fifo,srtf", "-o", "json", "--out", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	body, err := os.ReadFile(filepath.Join(dir, "bench.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw []map[string]any
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	if len(raw) != 2 {
		t.Fatalf("want 2 runs, got %d:\n%s", len(raw), body)
	}
	for _, field := range []string{"jobs", "scheme", "status", "iterations", "events", "wall_s", "iters_per_s", "events_per_s", "us_per_job", "max_rss_mib", "alloc_mib"} {
		if _, ok := raw[0][field]; !ok {
			t.Errorf("no %q in %v", field, raw[0])
		}
	}
	var rs []bench.Result
	if err := json.Unmarshal(body, &rs); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if !r.OK() || r.Iterations <= 0 || r.Events <= 0 || r.WallS <= 0 || r.ItersPerS <= 0 || r.USPerJob <= 0 || r.MaxRSSMiB <= 0 {
			t.Errorf("run without its figures: %+v", r)
		}
	}
	if rs[0].Iterations != rs[1].Iterations {
		t.Errorf("one trace, two iteration counts: %d, %d", rs[0].Iterations, rs[1].Iterations)
	}
	for _, name := range []string{"bench-us-per-job.png", "bench-us-per-job.svg"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
}

// TestBenchTimeout: a run past --timeout is reported as such, and the scheme's
// larger sizes are skipped, not run.
func TestBenchTimeout(t *testing.T) {
	out, err := benchRun(t, "--jobs", "20,40", "--policy", "fifo", "--timeout", "1ns", "-o", "markdown")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"| 20 | fifo |", "over 1ns", "| 40 | fifo |", "skipped: timed out at 20 jobs", "| jobs | scheme |"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

// TestBenchRefusesBadFlags: each bad flag is refused with what to do.
func TestBenchRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--jobs", "0"}, "at least 1 job"},
		{[]string{"--load", "0"}, "positive"},
		{[]string{"--timeout", "-1s"}, "positive limit"},
		{[]string{"--policy", "nope"}, "nope"},
		{[]string{"-o", "yaml"}, "choose table, json, csv, markdown"},
		{[]string{"--device", "nope"}, "nope"},
		{[]string{"--all", "--policy", "fifo"}, "without --policy"},
	} {
		if _, err := run(t, append([]string{"bench"}, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("salus bench %v: got %v, want an error saying %q", c.args, err, c.want)
		}
	}
}

// TestBenchAllRunsEveryScheme: --all runs each mode with each policy it
// accepts, a row each.
func TestBenchAllRunsEveryScheme(t *testing.T) {
	out, err := benchRun(t, "--jobs", "10", "--all", "-o", "csv")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := len(core.Schemes())
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "10,") {
			rows++
		}
	}
	if want < 17 || rows != want {
		t.Errorf("%d rows of 10 jobs for %d registered schemes (want at least 17):\n%s", rows, want, out)
	}
}
