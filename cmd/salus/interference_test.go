package main

import (
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/salusgo/salus/interference"
)

// pairFile writes measured pairs of three job types made by a known rule, so
// the test does not need the published sets.
func pairFile(t *testing.T, dir string) string {
	t.Helper()
	type jp struct {
		name  string
		batch int
		s, p  float64
	}
	jobs := []jp{{"heavy", 64, 0.3, 1.5}, {"light", 16, 1.2, 0.2}, {"mid", 32, 0.7, 0.7}, {"mid", 64, 0.8, 0.9}, {"other", 8, 0.5, 0.4}}
	var pairs []interference.Pair
	for i, a := range jobs {
		for _, b := range jobs[i:] {
			pairs = append(pairs, interference.Pair{WorkerType: "p100", A: interference.Job{Name: a.name, Batch: a.batch}, B: interference.Job{Name: b.name, Batch: b.batch},
				AloneA: 10, AloneB: 20, NormA: 1 / (1 + a.s*b.p), NormB: 1 / (1 + b.s*a.p)})
			p := &pairs[len(pairs)-1]
			p.TogetherA, p.TogetherB = 10*p.NormA, 20*p.NormB
		}
	}
	path := filepath.Join(dir, "pairs.csv")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := interference.WritePairs(f, pairs); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// fit writes a model and prints its error beside today's rule; predict writes
// one row a pair, the measured pairs as measured.
func TestInterferenceFitThenPredict(t *testing.T) {
	dir := t.TempDir()
	pairs := pairFile(t, dir)
	model := filepath.Join(dir, "model.json")
	out, err := run(t, "interference", "fit", "--pairs", pairs, "--out", model, "--folds", "3")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"DEVICE", "p100", "timeslice", "RULE cross-val.", "0.5 EACH", model} {
		if !strings.Contains(out, want) {
			t.Errorf("fit's table lacks %q:\n%s", want, out)
		}
	}
	if _, err := interference.Load(model); err != nil {
		t.Fatal(err)
	}
	pred := filepath.Join(dir, "pred.csv")
	out, err = run(t, "interference", "predict", "--model", model, "--pairs", pairs, "--out", pred)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "median 0.000") {
		t.Errorf("measured pairs are predicted as measured:\n%s", out)
	}
	rows := readCSV(t, pred)
	want := "worker_type,job_a,batch_a,job_b,batch_b,predicted_a,predicted_b"
	if strings.Join(rows[0], ",") != want || len(rows) != 16 {
		t.Fatalf("%d rows, header %v; want 15 pairs under %s", len(rows)-1, rows[0], want)
	}
	// A pair file without figures, and a job the model has not seen.
	unseen := filepath.Join(dir, "unseen.csv")
	if err := os.WriteFile(unseen, []byte("worker_type,job_a,batch_a,job_b,batch_b\np100,heavy,64,newcomer,4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err = run(t, "interference", "predict", "--model", model, "--pairs", unseen, "--out", pred); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rows = readCSV(t, pred); len(rows) != 2 || rows[1][3] != "newcomer" {
		t.Errorf("%v", rows)
	}
}

func TestInterferenceCommandsRefuseBadInput(t *testing.T) {
	dir := t.TempDir()
	pairs := pairFile(t, dir)
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("worker_type,job_a,batch_a,job_b,batch_b\np100,a,1,b,two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"interference", "fit", "--out", "x.json"}, "--pairs FILE"},
		{[]string{"interference", "fit", "--pairs", pairs}, "--out MODEL"},
		{[]string{"interference", "fit", "--pairs", pairs, "--out", filepath.Join(dir, "m.json"), "--mode", "warp"}, "unknown sharing mechanism"},
		{[]string{"interference", "fit", "--pairs", bad, "--out", filepath.Join(dir, "m.json")}, "bad.csv: line 2: batch_b"},
		{[]string{"interference", "fit", "--pairs", pairs, "--out", filepath.Join(dir, "m.json"), "--device", "v100"}, `no pairs with worker_type "v100"`},
		{[]string{"interference", "predict", "--model", "rule", "--pairs", pairs, "--out", filepath.Join(dir, "p.csv")}, "today's rule"},
		{[]string{"interference", "predict", "--model", filepath.Join(dir, "none.json"), "--pairs", pairs, "--out", filepath.Join(dir, "p.csv")}, "none.json"},
		{[]string{"simulate", "--interference", filepath.Join(dir, "none.json")}, "--interference"},
	} {
		out, err := run(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("salus %s: %v, want %q\n%s", strings.Join(c.args, " "), err, c.want, out)
		}
	}
}

// predict's figures are the simulator's: two jobs of equal work simulated side
// by side under the same model end when the predicted rates say (the one less
// slowed first, then the other alone).
func TestPredictIsWhatTheSimulatorRuns(t *testing.T) {
	dir := t.TempDir()
	pairs := filepath.Join(dir, "pairs.csv")
	if err := os.WriteFile(pairs, []byte("worker_type,job_a,batch_a,job_b,batch_b\np100,resnet50,50,seq2seq,20\np100,alexnet,25,vae,64\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pred := filepath.Join(dir, "pred.csv")
	for _, mode := range []string{"timeslice", "mps"} {
		if out, err := run(t, "interference", "predict", "--model", "measured", "--pairs", pairs, "--out", pred, "--mode", mode); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, row := range readCSV(t, pred)[1:] {
			na, _ := strconv.ParseFloat(row[5], 64)
			nb, _ := strconv.ParseFloat(row[6], 64)
			trace := filepath.Join(dir, "trace.csv")
			csvText := "job_id,model,batch_size,iterations,arrival_s,iter_s,persistent_mib,ephemeral_mib,demand,startup_s\n" +
				"a," + row[1] + "," + row[2] + ",1000,0,0.1,1000,1000,0.5,0\n" +
				"b," + row[3] + "," + row[4] + ",1000,0,0.1,1000,1000,0.5,0\n"
			if err := os.WriteFile(trace, []byte(csvText), 0o644); err != nil {
				t.Fatal(err)
			}
			jobs := filepath.Join(dir, "jobs.csv")
			if out, err := run(t, "simulate", "--trace", trace, "--policy", "fifo", "--mode", mode, "--interference", "measured", "--jobs", jobs); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			end := map[string]float64{}
			for _, r := range readCSV(t, jobs)[1:] {
				end[r[3]], _ = strconv.ParseFloat(r[6], 64)
			}
			// 100 s of work each: the first to end ran at 100/t1 throughout; the
			// other did t1 x its rate beside it, then the rest alone.
			first, second := "a", "b"
			if end["b"] < end["a"] {
				first, second = "b", "a"
			}
			t1, t2 := end[first], end[second]
			got := map[string]float64{first: 100 / t1, second: (100 - (t2 - t1)) / t1}
			if math.Abs(got["a"]-na) > 1e-4 || math.Abs(got["b"]-nb) > 1e-4 {
				t.Errorf("%s, %s under %s: predict says %v, %v; simulate runs them at %.6f, %.6f", row[1], row[3], mode, na, nb, got["a"], got["b"])
			}
		}
	}
}
