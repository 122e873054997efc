package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/salusgo/salus/eval"
)

var (
	fifo = eval.Scheme{Mode: "exclusive", Policy: "fifo"}
	pack = eval.Scheme{Mode: "salus", Policy: "pack"}
)

// Measure counts the run's iterations and events; the same trace has the same
// iterations under every scheme.
func TestMeasureCounts(t *testing.T) {
	var iters int64
	for _, s := range []eval.Scheme{fifo, pack} {
		r, err := Measure(context.Background(), Cell{Jobs: 10, Load: 4, Seed: 1, Scheme: s, Device: "p100"})
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK() || r.Iterations <= 0 || r.Events <= 0 || r.MakespanS <= 0 || r.WallS <= 0 || r.USPerJob <= 0 || r.AllocMiB <= 0 {
			t.Errorf("%s: %+v", s, r)
		}
		if iters != 0 && r.Iterations != iters {
			t.Errorf("%s: %d iterations, fifo %d", s, r.Iterations, iters)
		}
		iters = r.Iterations
	}
}

// Exclusive fifo runs one job at a time on a GPU: no lane ever switches beside
// another. Pack's lanes take turns side by side: it switches, at most once per
// iteration, and the wall time per switch follows.
func TestMeasureCountsSwitches(t *testing.T) {
	f, err := Measure(context.Background(), Cell{Jobs: 200, Load: 4, Seed: 1, Scheme: fifo, Device: "p100", Interference: "measured"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Measure(context.Background(), Cell{Jobs: 200, Load: 4, Seed: 1, Scheme: pack, Device: "p100", Interference: "measured"})
	if err != nil {
		t.Fatal(err)
	}
	if f.Switches != 0 || f.NSPerSwitch != 0 {
		t.Errorf("exclusive fifo: %d switches (%.0f ns each); want none", f.Switches, f.NSPerSwitch)
	}
	if p.Switches <= 0 || p.Switches > p.Iterations || p.NSPerSwitch <= 0 {
		t.Errorf("pack: %d switches of %d iterations, %.0f ns each; want some, at most one per iteration", p.Switches, p.Iterations, p.NSPerSwitch)
	}
	t.Logf("pack: %d switches of %d iterations", p.Switches, p.Iterations)
}

func TestMeasureRefuses(t *testing.T) {
	for _, c := range []Cell{
		{Jobs: 0, Load: 1, Scheme: fifo, Device: "p100"},
		{Jobs: 1, Load: 0, Scheme: fifo, Device: "p100"},
		{Jobs: 1, Load: 1, Scheme: eval.Scheme{Mode: "exclusive", Policy: "nope"}, Device: "p100"},
		{Jobs: 1, Load: 1, Scheme: fifo, Device: "nope"},
	} {
		if _, err := Measure(context.Background(), c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// Run asks the runner for every size and scheme in order; a scheme that times
// out is skipped at the larger sizes, a failed cell is a row, and the others go on.
func TestRunSkipsAfterATimeout(t *testing.T) {
	var asked []string
	runner := func(_ context.Context, c Cell, timeout time.Duration) (Result, error) {
		asked = append(asked, c.Scheme.String())
		switch {
		case c.Scheme == pack && c.Jobs == 20:
			return Result{Status: StatusTimedOut, TimeoutS: timeout.Seconds()}, nil
		case c.Scheme == fifo && c.Jobs == 10:
			return Result{}, errors.New("boom")
		}
		return Result{Status: StatusOK, Iterations: 1, Events: 2, WallS: 1, USPerJob: 1}, nil
	}
	var seen int
	rs, err := Run(context.Background(), Options{Sizes: []int{10, 20, 30}, Schemes: []eval.Scheme{fifo, pack}, Load: 4, Seed: 1,
		Timeout: time.Minute, Runner: runner, Progress: func(Result) { seen++ }})
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("error %v, want the failed cell's", err)
	}
	want := []string{"10 fifo failed", "10 pack ok", "20 fifo ok", "20 pack timeout", "30 fifo ok", "30 pack skipped"}
	if len(rs) != len(want) || seen != len(want) {
		t.Fatalf("%d results, %d progress calls, want %d: %+v", len(rs), seen, len(want), rs)
	}
	for i, r := range rs {
		if got := strings.Join([]string{itoa(r.Jobs), r.Scheme, r.Status}, " "); got != want[i] {
			t.Errorf("row %d: %s, want %s", i, got, want[i])
		}
	}
	if len(asked) != 5 {
		t.Errorf("the runner ran %d cells, want 5 (not the skipped one): %v", len(asked), asked)
	}
	var table, md, csv, js bytes.Buffer
	for _, f := range []func() error{
		func() error { return Table(&table, rs) }, func() error { return Markdown(&md, rs) },
		func() error { return CSV(&csv, rs) }, func() error { return JSON(&js, rs) },
	} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	for _, out := range []string{table.String(), md.String()} {
		for _, s := range []string{"over 60s", "skipped: timed out at 20 jobs", "failed: boom"} {
			if !strings.Contains(out, s) {
				t.Errorf("no %q in:\n%s", s, out)
			}
		}
	}
	if n := strings.Count(md.String(), "\n"); n != 2+len(rs) {
		t.Errorf("markdown has %d lines, want %d:\n%s", n, 2+len(rs), md.String())
	}
	if n := strings.Count(csv.String(), "\n"); n != 1+len(rs) {
		t.Errorf("CSV has %d lines, want %d:\n%s", n, 1+len(rs), csv.String())
	}
	var back []Result
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back) != len(rs) {
		t.Errorf("JSON: %v, %d results", err, len(back))
	}
	dir := t.TempDir()
	for _, set := range [][]Result{rs, nil} {
		if _, err := Figure(set).Save(dir); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "bench-us-per-job.png")); err != nil {
			t.Fatal(err)
		}
	}
}

// A cancelled run stops, with the results so far.
func TestRunStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	rs, err := Run(ctx, Options{Sizes: []int{10, 20}, Schemes: []eval.Scheme{fifo}, Runner: func(context.Context, Cell, time.Duration) (Result, error) {
		cancel()
		return Result{Status: StatusOK}, nil
	}})
	if !errors.Is(err, context.Canceled) || len(rs) != 1 {
		t.Errorf("%v, %d results; want cancelled after 1", err, len(rs))
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// BenchmarkSimulate simulates the generated trace of 100 and 1,000 jobs (load 4)
// under fifo and pack, and reports the simulated iterations and events per second.
func BenchmarkSimulate(b *testing.B) {
	for _, n := range []int{100, 1000} {
		for _, s := range []eval.Scheme{fifo, pack} {
			b.Run(itoa(n)+"-"+s.String(), func(b *testing.B) {
				var iters, events int64
				var wall float64
				for b.Loop() {
					r, err := Measure(context.Background(), Cell{Jobs: n, Load: 4, Seed: 1, Scheme: s, Device: "p100"})
					if err != nil {
						b.Fatal(err)
					}
					iters, events, wall = iters+r.Iterations, events+r.Events, wall+r.WallS
				}
				if wall > 0 {
					b.ReportMetric(float64(iters)/wall, "iters/s")
					b.ReportMetric(float64(events)/wall, "events/s")
				}
			})
		}
	}
}
