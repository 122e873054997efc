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
	want := []string{"bars", "jct-cdf"}
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
		"capacity_mib", "salus v9.8.7 (0123456789ab&#43;dirty) (go", `href="timeline-fifo.svg"`} {
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

// Runs of suites and modes the report has not met are tabulated, and the
// tuning and inference fields named by the suites draw their charts.
func TestParseToleratesOtherSuites(t *testing.T) {
	results := []byte(`{"suite":"all","headlines":[{"claim":"x","paper":3.19,"measured":1.8}],"runs":[
	 {"suite":"tuning","runs":[
	  {"workload":"vae/64","scheme":"pack","makespan_s":600,"sequential_makespan_s":1800,"improvement":3},
	  {"workload":"vae/64","scheme":"mps","makespan_s":900,"sequential_makespan_s":1800,"improvement":2},
	  {"workload":"resnet50/50","scheme":"pack","makespan_s":5000,"sequential_makespan_s":6000,"improvement":1.2}]},
	 {"suite":"inference","runs":[
	  {"scheme":"exclusive","gpus_needed":42,"models":[{"model":"vgg16","latency_mean_s":0.02,"latency_p99_s":0.03,"latency_alone_s":0.02}]},
	  {"scheme":"salus","gpus_needed":1,"latency":{"vgg16":{"latency_mean_s":0.025,"latency_p99_s":0.05,"latency_alone_s":0.02}}}]},
	 {"suite":"training","runs":[{"policy":"fair","mode":"suspend","avg_jct_s":60,"new_field":{"x":1}},
	  {"policy":"fair","mode":"salus","avg_jct_s":50}]}]}`)
	suites, err := Parse(results)
	if err != nil {
		t.Fatal(err)
	}
	if len(suites) != 4 || suites[0].Name != "all" || len(suites[0].Runs) != 0 {
		t.Fatalf("got %d suites, want the container and its 3", len(suites))
	}
	suites = suites[1:]
	kinds := map[string]string{}
	for _, s := range suites {
		for _, r := range s.Runs {
			kinds[r.Label] = r.Kind
		}
	}
	want := map[string]string{"vae/64 pack": KindTuning, "vae/64 mps": KindTuning, "resnet50/50 pack": KindTuning,
		"exclusive": KindInference, "salus": KindInference, "fair/suspend": KindTraining, "fair/salus": KindTraining}
	for label, kind := range want {
		if kinds[label] != kind {
			t.Errorf("run %q: kind %q, want %q (all: %v)", label, kinds[label], kind, kinds)
		}
	}
	inf := suites[1].Runs
	if len(inf[0].Latency) != 1 || len(inf[1].Latency) != 1 || inf[1].Latency[0].Model != "vgg16" || inf[1].Latency[0].MeanS != 0.025 {
		t.Errorf("latencies: %+v / %+v", inf[0].Latency, inf[1].Latency)
	}
	dir := t.TempDir()
	if d := os.Getenv("SALUS_REPORT_TEST_DIR"); d != "" {
		dir = d // to look at the pictures
	}
	w, err := Write(Options{Dir: dir, Results: results})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tuning-bars", "inference-gpus", "inference-latency", "training-bars"} {
		if _, err := os.Stat(filepath.Join(dir, name+".png")); err != nil {
			t.Errorf("%s.png: %v (wrote %v)", name, err, w.Files)
		}
	}
}
