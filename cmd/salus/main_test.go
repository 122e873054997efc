package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/eval"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestEvalDefaultPrintsTheTable(t *testing.T) {
	out, err := run(t, "eval")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fifo", "srtf", "pack", "fair", "JCT/fifo", "3.19x", "Times in minutes"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// It fits 120 columns; -o wide adds the other columns.
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 120 {
			t.Errorf("a line of %d characters: %q", len(line), line)
		}
	}
	wide, err := run(t, "eval", "-o", "wide")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"makespan/fifo", "makespan/bound", "worst slowdown"} {
		if strings.Contains(out, want+"  ") || !strings.Contains(wide, want) {
			t.Errorf("%q: only -o wide should show it", want)
		}
	}
}

// A run of seconds is reported in seconds, not in tenths of a minute.
func TestEvalShortRunInSeconds(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(trace, []byte("job_id,model,batch_size,iterations,arrival_s\na,alexnet,25,300,0\nb,alexnet,25,200,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "eval", "--trace", trace, "--policy", "fifo,srtf")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Times in seconds") || strings.Contains(out, " min") {
		t.Errorf("a run of seconds is not in seconds:\n%s", out)
	}
}

func TestEvalJSON(t *testing.T) {
	out, err := run(t, "eval", "--format", "json", "--policy", "fifo", "--policy", "srtf")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct{ Runs []struct{ Policy string } }
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Runs) != 2 {
		t.Fatalf("json %v: %s", err, out)
	}
}

func TestBadTraceFailsWithLineAndFieldAndNoResult(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.csv")
	os.WriteFile(path, []byte("job_id,model,batch_size,iterations,arrival_s\na,resnet50,50,10,0\nb,resnet50,50,x,1\n"), 0o644)
	for _, args := range [][]string{{"trace", "validate", path}, {"eval", "--trace", path}, {"simulate", "--trace", path}} {
		out, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), "bad.csv:3: field \"iterations\"") {
			t.Errorf("%v: error %v", args, err)
		}
		if strings.Contains(out, "makespan") {
			t.Errorf("%v printed results despite the error:\n%s", args, out)
		}
	}
}

func TestTraceGenValidates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if _, err := run(t, "trace", "gen", "--seed", "9", "--format", "jsonl", "--out", path); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "trace", "validate", path)
	if err != nil || !strings.Contains(out, "ok, 100 jobs") {
		t.Fatalf("%v: %s", err, out)
	}
}

func TestModelsJSON(t *testing.T) {
	out, err := run(t, "models", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var ps []map[string]any
	if err := json.Unmarshal([]byte(out), &ps); err != nil || len(ps) < 47 {
		t.Fatalf("%v, %d profiles", err, len(ps))
	}
}

func TestEvalSuitesJSON(t *testing.T) {
	for suite, size := range map[string][]string{"tuning": {"--tuning-jobs", "20"}, "inference": {"--requests", "5"}} {
		out, err := run(t, append([]string{"eval", "--suite", suite, "--format", "json"}, size...)...)
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Suite string
			Runs  []map[string]any
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Suite != suite || len(rep.Runs) == 0 {
			t.Fatalf("%s: %v %s", suite, err, out)
		}
	}
	if _, err := run(t, "eval", "--suite", "nope"); err == nil || !strings.Contains(err.Error(), strings.Join(eval.Names(), ", ")) {
		t.Errorf("unknown suite: %v (want the registry's suites: %v)", err, eval.Names())
	}
}

// --policy and --mode take commas and repeats alike, as in salus sweep.
func TestPolicyTakesCommasAndRepeats(t *testing.T) {
	for _, args := range [][]string{
		{"eval", "--format", "json", "--policy", "fifo,srtf"},
		{"eval", "--format", "json", "--policy", "fifo", "--policy", "srtf"},
	} {
		out, err := run(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var rep struct{ Runs []struct{ Policy string } }
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		if len(rep.Runs) != 2 || rep.Runs[0].Policy != "fifo" || rep.Runs[1].Policy != "srtf" {
			t.Errorf("%v: runs %+v, want fifo and srtf", args, rep.Runs)
		}
	}
}

// A gang job wider than the node fails eval once, before running, with one
// message that names the job: not each scheme with the same message.
func TestEvalAJobTooWideFailsOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wide.csv")
	if err := os.WriteFile(path, []byte("job_id,model,batch_size,iterations,arrival_s,gpus\na,resnet50,25,100,0,1\nwide,resnet50,25,100,5,16\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "eval", "--trace", path, "--gpus", "8")
	if err == nil {
		t.Fatalf("eval of a 16-GPU job on 8 GPUs passed:\n%s", out)
	}
	all := out + err.Error()
	if n := strings.Count(all, `job "wide" needs 16 GPUs at once`); n != 1 || strings.Contains(all, "runs failed") {
		t.Errorf("the job is named %d times (want once, before any run):\n%s", n, all)
	}
}

// A run that fails does not throw away the others: they are printed, the failed
// one is a row with its error, and the command fails.
func TestEvalKeepsRunsBesideAFailedOne(t *testing.T) {
	out, err := run(t, "eval", "--mps-context-mib", "2000")
	if err == nil || !strings.Contains(err.Error(), "1 of 8 runs failed") {
		t.Fatalf("error %v, want 1 of 8 runs failed", err)
	}
	for _, want := range []string{"srtf", "timeslice", "suspend-srtf", "failed", "mps failed: mps: trace paper: job"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err = run(t, "eval", "--mps-context-mib", "2000", "--format", "json")
	var rep struct {
		Runs []struct{ Scheme, Error string }
	}
	if jerr := json.Unmarshal([]byte(out), &rep); jerr != nil || err == nil || len(rep.Runs) != 8 {
		t.Fatalf("json: %v, %v, %d runs", jerr, err, len(rep.Runs))
	}
	for _, r := range rep.Runs {
		if (r.Scheme == "mps") != (r.Error != "") {
			t.Errorf("run %s: error %q", r.Scheme, r.Error)
		}
	}
}

// A flag given where it does nothing is an error that says where it applies.
func TestEvalFlagsThatDoNotApply(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(trace, []byte("job_id,model,batch_size,iterations,arrival_s\na,alexnet,25,3,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--suite", "paper", "--trace", trace}, "--trace applies to the training, tuning and inference suites"},
		{[]string{"--suite", "training", "--slo-p99", "50ms"}, "--slo-p99 applies to the inference suite"},
		{[]string{"--suite", "inference", "--inference-jobs", "3"}, "give the latency they must meet, --slo-p99"},
		{[]string{"--suite", "inference", "--trace", trace}, "give the latency they must meet, --slo-p99"},
		{[]string{"--suite", "inference", "--request-rate", "3", "--slo-p99", "1s"}, "give --inference-jobs N"},
		{[]string{"--suite", "inference", "--trace", trace, "--slo-p99", "1s"}, "none of its 1 jobs is an inference job"},
		{[]string{"--suite", "tuning", "--trace", trace, "--tuning-jobs", "3"}, "with --trace your trace's jobs"},
		{[]string{"--suite", "tuning", "--load", "2"}, "--load applies to the training suite"},
		{[]string{"--trace", trace, "--seed", "3"}, "--seed shapes the generated trace"},
		{[]string{"--suite", "tuning", "--resample", "bootstrap"}, "--resample applies to the training suite"},
		{[]string{"--suite", "tuning", "--trace-kind", "salus100"}, "--trace-kind applies to the training suite"},
		{[]string{"--trace", trace, "--trace-kind", "salus100"}, "--trace-kind chooses the generated trace"},
		{[]string{"--suite", "inference", "--tuning-jobs", "3"}, "--tuning-jobs applies to the tuning suite"},
		{[]string{"--suite", "tuning", "--requests", "3"}, "--requests applies to the inference suite"},
		{[]string{"--iterations", "3"}, "--iterations applies to the overhead suite"},
		{[]string{"--time-scale", "0.1"}, "--time-scale applies to the live engine"},
	} {
		_, err := run(t, append([]string{"eval"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("eval %v: %v, want %q", c.args, err, c.want)
		}
	}
	// Where they apply they are taken.
	for _, args := range [][]string{{"--trace", trace, "--policy", "fifo"}, {"--trace", trace, "--policy", "fifo", "--load", "2"},
		{"--trace", trace, "--policy", "fifo", "--resample", "jitter", "--seed", "3"}, {"--suite", "inference", "--seed", "2", "--requests", "3"},
		{"--trace-kind", "salus100", "--policy", "fifo"}, {"--suite", "paper"}, {"--suite", "tuning", "--trace", trace},
		{"--suite", "inference", "--inference-jobs", "14", "--request-rate", "5", "--slo-p99", "80ms", "--requests", "10"}} {
		if _, err := run(t, append([]string{"eval"}, args...)...); err != nil {
			t.Errorf("eval %v: %v", args, err)
		}
	}
}

// A misspelt flag gets the closest flags as a suggestion; a bad --load names
// only what the user gave.
func TestFlagMistakesSayWhatToDo(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
		not  string
	}{
		{[]string{"eval", "--lod", "2"}, "did you mean --load?", ""},
		{[]string{"eval", "--polcy", "srtf"}, "did you mean --policy?", ""},
		{[]string{"simulate", "--sed", "3"}, "did you mean --seed?", ""},
		{[]string{"eval", "--xyzzy"}, "salus eval --help lists the flags", ""},
		{[]string{"eval", "--load", "-1"}, "--load -1: give a positive arrival-rate multiplier", "jobs"},
		{[]string{"trace", "gen", "--load", "-1"}, "load -1: give a positive arrival-rate multiplier", "jobs"},
	} {
		_, err := run(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || c.not != "" && strings.Contains(err.Error(), c.not) {
			t.Errorf("salus %v: %v, want %q", c.args, err, c.want)
		}
	}
}
