package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runSplit runs salus with stdout and stderr apart.
func runSplit(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRoot()
	var out, errs bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errs)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errs.String(), err
}

func writeWhatIfTrace(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mine.csv")
	data := "job_id,model,batch_size,iterations,arrival_s\na,alexnet,25,3000,0\nb,resnet50,50,2000,60\nc,vae,64,5000,120\nd,resnet50,50,500,600\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// --load scales a trace file's arrivals, says so on stderr and in the JSON, and
// --capacity-mib applies to the file's runs too.
func TestEvalLoadAndCapacityOnATraceFile(t *testing.T) {
	trace := writeWhatIfTrace(t)
	type report struct {
		Trace struct {
			Name string
			Load float64
		}
		Device struct {
			CapacityMiB float64 `json:"capacity_mib"`
		}
		Runs []struct {
			AvgJCT float64 `json:"avg_jct_s"`
		}
	}
	get := func(args ...string) (report, string) {
		out, errs, err := runSplit(t, append([]string{"eval", "--trace", trace, "--policy", "fifo", "-o", "json"}, args...)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errs)
		}
		var r report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return r, errs
	}
	base, errs := get()
	if base.Trace.Load != 0 || errs != "" {
		t.Errorf("without --load: load %v, stderr %q; want 0 and nothing", base.Trace.Load, errs)
	}
	fast, errs := get("--load", "4", "--capacity-mib", "9000")
	if fast.Trace.Load != 4 || !strings.Contains(fast.Trace.Name, "load4") || !strings.Contains(errs, "divided by 4") {
		t.Errorf("--load 4: trace %+v, stderr %q; want load 4 said in both", fast.Trace, errs)
	}
	if fast.Device.CapacityMiB != 9000 {
		t.Errorf("--capacity-mib 9000 with --trace: device capacity %v", fast.Device.CapacityMiB)
	}
	// The jobs arrive closer together and queue longer behind each other.
	if fast.Runs[0].AvgJCT <= base.Runs[0].AvgJCT {
		t.Errorf("fifo avg JCT at load 4 %v, not above load 1's %v", fast.Runs[0].AvgJCT, base.Runs[0].AvgJCT)
	}
	if _, _, err := runSplit(t, "eval", "--trace", trace, "--seed", "3"); err == nil || !strings.Contains(err.Error(), "--resample") {
		t.Errorf("--seed with a trace file and no --resample: %v, want a refusal pointing at --resample", err)
	}
	out, errs, err := runSplit(t, "eval", "--trace", trace, "--policy", "fifo", "--resample", "bootstrap", "--seed", "3")
	if err != nil || !strings.Contains(errs, "bootstrap resample") || !strings.Contains(out, "bootstrap resample of the file (seed 3)") {
		t.Errorf("--resample bootstrap --seed 3: %v\nstdout:\n%s\nstderr:\n%s", err, out, errs)
	}
}

// sweep --trace resamples the file by bootstrap when there are several seeds,
// and says which scheme to pick.
func TestSweepATraceFile(t *testing.T) {
	trace := writeWhatIfTrace(t)
	out := t.TempDir()
	stdout, _, err := runSplit(t, "sweep", "--trace", trace, "--seeds", "3", "--load", "1", "--policy", "fifo,srtf", "--workers", "1", "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"trace", "mine", "Jain (slowdowns)", "bootstrap resample", "mine, load 1, 14.0 GiB: On makespan", "seed by seed (3 paired runs)", "Recommendation: "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("sweep output lacks %q:\n%s", want, stdout)
		}
	}
	grid, err := os.ReadFile(filepath.Join(out, "grid.json"))
	if err != nil || !strings.Contains(string(grid), `"resample": "bootstrap"`) {
		t.Errorf("grid.json: %v\n%s\nwant resample bootstrap by default with 3 seeds", err, grid)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace", trace, "--jobs", "5"}, "--jobs sizes the generated trace"},
		{[]string{"--resample", "jitter"}, "--resample draws from --trace files"},
		{[]string{"--trace", trace, "--resample", "none", "--seeds", "2"}, "resample (bootstrap or jitter) or run one seed"},
	} {
		if _, _, err := runSplit(t, append([]string{"sweep", "--out", t.TempDir()}, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("sweep %v: %v, want %q", c.args, err, c.want)
		}
	}
}
