package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/workload"
)

// trainingReport runs a small training suite with event logs and writes its report.
func trainingReport(t *testing.T) (string, *Written) {
	t.Helper()
	dir := t.TempDir()
	tr, err := workload.Generate(workload.Default(), workload.GenOptions{Seed: 3, Jobs: 30})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := eval.Training(eval.TrainingOptions{Trace: tr, Device: device.DefaultDevice(), OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	w, err := Write(Options{Dir: dir, Results: rep, Trace: tr, Args: []string{"salus", "eval", "--out", dir},
		Version: "v9.8.7 (0123456789ab+dirty)"})
	if err != nil {
		t.Fatal(err)
	}
	return dir, w
}

func TestWriteTrainingReport(t *testing.T) {
	dir, w := trainingReport(t)
	want := []string{"bars", "jct-cdf", "fairness"}
	for _, p := range []string{"fifo", "srtf", "pack", "fair"} {
		want = append(want, "timeline-"+p, "memory-"+p)
	}
	for _, name := range want {
		for _, ext := range []string{".png", ".svg"} {
			fi, err := os.Stat(filepath.Join(dir, name+ext))
			if err != nil || fi.Size() == 0 {
				t.Errorf("%s%s: missing or empty (%v)", name, ext, err)
			}
		}
	}
	if len(w.Files) < 2*len(want) {
		t.Errorf("wrote %d plot files, want at least %d: %v", len(w.Files), 2*len(want), w.Files)
	}
	html, err := os.ReadFile(w.Index)
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	// The version is Options.Version, with html/template's escape of "+".
	for _, s := range []string{"data:image/png;base64,", "avg JCT (min)", "salus eval --out", "Trace", "model parameters",
		"capacity_mib", "salus v9.8.7 (0123456789ab&#43;dirty) (go", `href="timeline-fifo.svg"`,
		"Jain (slowdowns)", "worst slowdown", "Which scheme?", "Recommendation: ", "<summary>fifo: 30 jobs</summary>", "slowdown</th>", "job-01"} {
		if !strings.Contains(page, s) {
			t.Errorf("index.html lacks %q", s)
		}
	}
	for _, s := range []string{"http://", "https://", "ZgotmplZ"} {
		if strings.Contains(page, s) {
			t.Errorf("index.html contains %q: it must be self-contained", s)
		}
	}
}

// --suite all's report: each suite's tables and figures, the headlines, and a
// failed suite as a section with its error; the tuning chart's reference line is
// the figure the suite carries.
func TestWriteAllReport(t *testing.T) {
	tu := &eval.TuningReport{Suite: "tuning", Engine: "sim", Runs: []eval.TuningRun{
		{Workload: "vae/64", Scheme: "pack", Makespan: 600, SequentialS: 1800, Improvement: 3},
		{Workload: "vae/64", Scheme: "mps", Makespan: 900, SequentialS: 1800, Improvement: 2},
		{Workload: "resnet50/50", Scheme: "pack", Makespan: 5000, SequentialS: 6000, Improvement: 1.2}},
		Paper: eval.Paper{Claim: "utilization", Value: 2.5, Measured: 3}}
	in := &eval.InferenceReport{Suite: "inference", Engine: "sim", Runs: []eval.InferenceRun{
		{Scheme: "exclusive", GPUsNeeded: 42, Models: []eval.ModelLatency{{Model: "vgg16", MeanS: 0.02, P99S: 0.03, AloneS: 0.02}}},
		{Scheme: "salus", GPUsNeeded: 1, Models: []eval.ModelLatency{{Model: "vgg16", MeanS: 0.025, P99S: 0.05, AloneS: 0.02}}}}}
	failed := &eval.FailedSuite{Suite: "training", Error: "no trace: boom"}
	dir := t.TempDir()
	if d := os.Getenv("SALUS_REPORT_TEST_DIR"); d != "" {
		dir = d // to look at the pictures
	}
	w, err := Write(Options{Dir: dir, Results: eval.All(failed, tu, in)})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tuning-bars", "inference-gpus", "inference-latency"} {
		if _, err := os.Stat(filepath.Join(dir, name+".png")); err != nil {
			t.Errorf("%s.png: %v (wrote %v)", name, err, w.Files)
		}
	}
	html, err := os.ReadFile(w.Index)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"no trace: boom", "tuning runs", "improvement", "GPUs needed", "request latency per model",
		"2.50x dashed", `id="suite-all"`, "vae/64"} {
		if !strings.Contains(string(html), s) {
			t.Errorf("index.html lacks %q", s)
		}
	}
}
