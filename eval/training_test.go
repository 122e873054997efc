package eval

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/provenance"
	"github.com/salusgo/salus/workload"
)

func salus100(t testing.TB, seed int64) *workload.Trace {
	tr, err := workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Salus100, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestTrainingSuiteOrdersPoliciesAsTheyShould(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		rep, err := Training(TrainingOptions{Trace: salus100(t, seed), Device: device.DefaultDevice(), Modes: core.DefaultModeParams()})
		if err != nil {
			t.Fatal(err)
		}
		runs := map[string]Run{}
		for _, r := range rep.Runs {
			runs[r.Scheme] = r
			if r.Finished != 100 {
				t.Errorf("seed %d %s: %d of 100 jobs finished", seed, r.Policy, r.Finished)
			}
		}
		if !(runs["srtf"].AvgJCTS < runs["fifo"].AvgJCTS) {
			t.Errorf("seed %d: srtf avg JCT %.0f not below fifo's %.0f", seed, runs["srtf"].AvgJCTS, runs["fifo"].AvgJCTS)
		}
		if !(runs["pack"].MakespanS <= runs["fifo"].MakespanS) {
			t.Errorf("seed %d: pack makespan %.0f above fifo's %.0f", seed, runs["pack"].MakespanS, runs["fifo"].MakespanS)
		}
		if rep.Paper.Measured != runs["srtf"].JCTSpeedup || rep.Paper.Value != 3.19 {
			t.Errorf("paper comparison %+v", rep.Paper)
		}
	}
}

func TestJSONCarriesTheFields(t *testing.T) {
	rep, err := Training(TrainingOptions{Trace: salus100(t, 1), Device: device.DefaultDevice(), Modes: core.DefaultModeParams()})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.JSON(&buf); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Suite string
		Trace struct {
			Name string
			Jobs int
			Seed int64
		}
		Runs []map[string]any
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Suite != "training" || got.Trace.Name != "salus100" || got.Trace.Jobs != 100 || got.Trace.Seed != 1 || len(got.Runs) != 8 {
		t.Fatalf("report header %+v", got)
	}
	for i, want := range []string{"fifo", "srtf", "pack", "fair", "mps", "timeslice", "suspend-fair", "suspend-srtf"} {
		r := got.Runs[i]
		if r["scheme"] != want {
			t.Errorf("run %d is %v, want %s", i, r["scheme"], want)
		}
		for _, k := range []string{"jobs", "makespan_s", "avg_jct_s", "p95_jct_s", "avg_queuing_s"} {
			if _, ok := r[k].(float64); !ok {
				t.Errorf("run %s lacks %s", want, k)
			}
		}
	}
}

func TestOutDirHoldsLogsAndResults(t *testing.T) {
	dir := t.TempDir()
	tr, _ := workload.Generate(workload.Default(), workload.GenOptions{Seed: 4, Jobs: 10})
	rep, err := Training(TrainingOptions{Trace: tr, Schemes: []Scheme{{"exclusive", "fifo"}, {"salus", "pack"}}, Device: device.DefaultDevice(), OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	prov := provenance.Record{Version: "devel", Command: []string{"salus", "eval"}, Seeds: []int64{4}}
	if err := WriteResults(dir, rep, prov); err != nil {
		t.Fatal(err)
	}
	// results.json is the report's JSON with its provenance as the first field.
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Provenance provenance.Record `json:"provenance"`
		Runs       []map[string]any  `json:"runs"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("results.json: %v\n%s", err, b)
	}
	if !reflect.DeepEqual(got.Provenance, prov) || len(got.Runs) != len(rep.Runs) {
		t.Errorf("results.json: provenance %+v (want %+v), %d runs (want %d)", got.Provenance, prov, len(got.Runs), len(rep.Runs))
	}
	for _, name := range []string{"events-fifo.jsonl.gz", "events-pack.jsonl.gz", "results.json", "results.csv"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	// The written log gives the same metrics as the in-memory run.
	for _, run := range rep.Runs {
		again, err := metrics.FromFile(run.Log)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(again.AvgJCTS-run.AvgJCTS) > 1e-4 || math.Abs(again.MakespanS-run.MakespanS) > 1e-4 {
			t.Errorf("%s: from file %+v, in memory %+v", run.Policy, again, run.Result)
		}
	}
}

func BenchmarkTrainingSuite(b *testing.B) {
	tr := salus100(b, 1)
	for b.Loop() {
		if _, err := Training(TrainingOptions{Trace: tr, Device: device.DefaultDevice(), Modes: core.DefaultModeParams()}); err != nil {
			b.Fatal(err)
		}
	}
}

// A user's trace (read from a file: no generator kind) is not the paper's
// experiment: its report carries no paper figure and no headline.
func TestUsersTraceHasNoPaperHeadline(t *testing.T) {
	tr := salus100(t, 1)
	tr.Kind = "" // as ReadTraceFile leaves it
	rep, err := Training(TrainingOptions{Trace: tr, Device: device.DefaultDevice(), Modes: core.DefaultModeParams()})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.Table(&buf); err != nil {
		t.Fatal(err)
	}
	if hs := rep.Headlines(); len(hs) != 0 || rep.Paper.Value != 0 || bytes.Contains(buf.Bytes(), []byte("Paper:")) {
		t.Errorf("a user's trace got the paper's headline: %+v, %+v\n%s", hs, rep.Paper, buf.String())
	}
}

// On several GPUs the training table shows how busy the least and the most
// busy GPU were beside the total, and says what the column is; on one GPU
// it shows no such column.
func TestTableShowsBusyPerGPU(t *testing.T) {
	tr, err := workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Salus100, Seed: 3, Jobs: 30, Load: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, gpus := range []int{1, 3} {
		dev := device.DefaultDevice()
		dev.GPUs = gpus
		rep, err := Training(TrainingOptions{Trace: tr, Device: dev, Schemes: []Scheme{{"exclusive", "fifo"}, {"salus", "srtf"}}})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := rep.Table(&b); err != nil {
			t.Fatal(err)
		}
		has := strings.Contains(b.String(), "per GPU")
		if has != (gpus > 1) {
			t.Errorf("%d GPUs: the table shows a per-GPU column %v:\n%s", gpus, has, b.String())
		}
		for _, run := range rep.Runs {
			if gpus > 1 && !strings.Contains(b.String(), busyPerGPU(run, rep.Unit())) {
				t.Errorf("%d GPUs, %s: %q not in the table", gpus, run.Scheme, busyPerGPU(run, rep.Unit()))
			}
		}
	}
}
