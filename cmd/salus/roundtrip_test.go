package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/live"
)

// The round trip: three real PyTorch jobs under a daemon (fifo), then salus profile
// and salus trace from-log on its event log, then salus eval --catalog --trace on
// what they wrote: the simulated makespan is within 10% of the live one. Skipped
// when torch is missing, and in -short mode.
func TestRoundTripRealPyTorchJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("real PyTorch jobs are skipped in -short mode")
	}
	p := live.PyTorch{Device: "cpu", Threads: 1}
	if err := p.Available(); err != nil {
		t.Skip(err)
	}
	pol, err := core.Lookup("fifo")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	logPath := filepath.Join(dir, "live.jsonl")
	if d := os.Getenv("SALUS_ROUNDTRIP_KEEP"); d != "" {
		logPath = filepath.Join(d, "live.jsonl")
	}
	jobs := []eval.TraceJob{
		{ID: "A", Model: "cnn", Iterations: 24, ArrivalS: 0, DeclaredS: 1},
		{ID: "B", Model: "mlp", Iterations: 40, ArrivalS: 0.1, DeclaredS: 1},
		{ID: "C", Model: "cnn", Iterations: 10, ArrivalS: 0.2, DeclaredS: 0.5},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := eval.RunPyTorchTrace(ctx, p, jobs, eval.TraceDaemon{Policy: pol, CapacityMiB: 16384, LogPath: logPath, Grace: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	liveS := run.Result.MakespanS
	if run.Result.Finished != 3 || liveS <= 0 {
		t.Fatalf("live run: %+v", run.Result)
	}
	// Each client reported its iteration time (no memory: no CUDA here).
	measured := map[string]float64{}
	if err := eventlog.ReadFile(logPath, func(e eventlog.Event) error {
		if e.Kind == eventlog.Measured {
			measured[e.Job] = e.IterS
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(measured) != 3 || measured["A"] <= 0 {
		t.Errorf("measured events %v, want one per job", measured)
	}

	catalog, trace := filepath.Join(dir, "profile.yaml"), filepath.Join(dir, "trace.csv")
	if _, err := run1(t, "profile", logPath, "--out", catalog); err != nil {
		t.Fatal(err)
	}
	if _, err := run1(t, "trace", "from-log", logPath, "--catalog", catalog, "--out", trace); err != nil {
		t.Fatal(err)
	}
	prof, _ := os.ReadFile(catalog)
	tr, _ := os.ReadFile(trace)
	if !strings.Contains(string(prof), "model: cnn") || !strings.Contains(string(prof), "model: mlp") || strings.Contains(string(tr), "iter_s") {
		t.Errorf("profile:\n%s\ntrace (no inline figures expected: the catalog has the models):\n%s", prof, tr)
	}
	out, err := run1(t, "eval", "--catalog", catalog, "--trace", trace, "--policy", "fifo", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Runs []struct {
			MakespanS float64 `json:"makespan_s"`
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Runs) != 1 {
		t.Fatalf("eval json %v: %s", err, out)
	}
	simS := rep.Runs[0].MakespanS
	t.Logf("makespan: live %.3f s, simulated from the profile %.3f s (%+.1f%%)\nprofile:\n%s\ntrace:\n%s", liveS, simS, 100*(simS-liveS)/liveS, prof, tr)
	if math.Abs(simS-liveS) > 0.1*liveS {
		t.Errorf("simulated makespan %.3f s is more than 10%% from the live %.3f s", simS, liveS)
	}
}

// run1 is run, without a shared root between calls.
func run1(t *testing.T, args ...string) (string, error) { t.Helper(); return run(t, args...) }
