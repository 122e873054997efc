package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/interference"
	"github.com/salusgo/salus/live"
)

// TestProfilePairsOfTwoCPUJobs: salus profile --pairs on two small CPU PyTorch
// jobs (one command a string, one a list) writes the pair file's columns, a row
// for A-A, A-B and B-B in that order, each job's alone figure positive and the
// same in every row, normalized together / alone, and the file reads back as
// measured pairs. The sizes of the figures are the machine's: not checked.
func TestProfilePairsOfTwoCPUJobs(t *testing.T) {
	py := live.PyTorch{}
	if err := py.Available(); err != nil {
		t.Skip(err)
	}
	train, err := filepath.Abs(filepath.Join(repoRoot, "examples", "train.py"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	jobs := filepath.Join(dir, "jobs.yaml")
	common := "--device cpu --threads 1 --iterations 1000000 --salus env"
	yml := fmt.Sprintf(`jobs:
  - name: mlp
    batch: 16
    command: /usr/bin/python3 %s --model mlp --width 64 --batch-size 16 %s
  - name: cnn
    batch: 8
    command: [/usr/bin/python3, %s, --model, cnn, --width, "8", --batch-size, "8", %s]
`, train, common, train, strings.Join(strings.Fields(common), ", "))
	if err := os.WriteFile(jobs, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "pairs.csv")
	logs, err := run(t, "profile", "--pairs", jobs, "--duration", "2s", "--warmup", "2", "--device", "cpu", "--out", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}

	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s\n%s", logs, b)
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recs[0], interference.PairColumns) {
		t.Fatalf("header %v, want %v", recs[0], interference.PairColumns)
	}
	want := [][2]string{{"mlp", "mlp"}, {"mlp", "cnn"}, {"cnn", "cnn"}}
	if len(recs) != 1+len(want) {
		t.Fatalf("%d rows, want %d (A-A, A-B, B-B):\n%v", len(recs)-1, len(want), recs)
	}
	col := map[string]int{}
	for i, c := range recs[0] {
		col[c] = i
	}
	alone := map[string]float64{}
	for i, r := range recs[1:] {
		num := func(c string) float64 {
			v, err := strconv.ParseFloat(r[col[c]], 64)
			if err != nil {
				t.Fatalf("row %d: %s %q: %v", i+1, c, r[col[c]], err)
			}
			return v
		}
		if r[col["worker_type"]] != "cpu" || r[col["job_a"]] != want[i][0] || r[col["job_b"]] != want[i][1] {
			t.Errorf("row %d: %v, want cpu, %s and %s", i+1, r, want[i][0], want[i][1])
		}
		same := "0"
		if want[i][0] == want[i][1] {
			same = "1"
		}
		if r[col["same_job"]] != same || r[col["clipped_a"]] != "0" || r[col["clipped_b"]] != "0" {
			t.Errorf("row %d: same_job %s, clipped %s %s; want %s, 0, 0", i+1, r[col["same_job"]], r[col["clipped_a"]], r[col["clipped_b"]], same)
		}
		for _, side := range []string{"a", "b"} {
			job := r[col["job_"+side]]
			batch := map[string]string{"mlp": "16", "cnn": "8"}[job]
			if r[col["batch_"+side]] != batch {
				t.Errorf("row %d: batch_%s %s, want %s", i+1, side, r[col["batch_"+side]], batch)
			}
			a, together, norm := num("alone_"+side), num("together_"+side), num("normalized_"+side)
			if a <= 0 || together < 0 {
				t.Errorf("row %d: alone_%s %g, together_%s %g: want a positive alone figure", i+1, side, a, side, together)
			}
			if prev, ok := alone[job]; ok && prev != a {
				t.Errorf("row %d: alone_%s %g, another row's %g: a job has one alone figure", i+1, side, a, prev)
			}
			alone[job] = a
			if a > 0 && math.Abs(norm-together/a) > 1e-4*max(1, norm) {
				t.Errorf("row %d: normalized_%s %g, want together/alone %g", i+1, side, norm, together/a)
			}
		}
	}
	pairs, err := interference.ReadPairsFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pairs {
		if !p.Measured || p.WorkerType != "cpu" || p.A.Name != want[i][0] || p.B.Name != want[i][1] {
			t.Errorf("read back, pair %d: %+v", i+1, p)
		}
	}
	// The file is ready for fit, and the fitted model answers its pairs as measured.
	model := filepath.Join(filepath.Dir(out), "cpu-model.json")
	if o, err := run(t, "interference", "fit", "--pairs", out, "--out", model, "--folds", "2"); err != nil {
		t.Fatalf("interference fit on the measured pairs: %v\n%s", err, o)
	}
	m, err := interference.Load(model)
	if err != nil || len(m.Devices) != 1 || m.Devices[0].Device != "cpu" {
		t.Fatalf("model %+v, %v", m, err)
	}
	for _, p := range pairs {
		a, b := m.Devices[0].PredictPair(p.A, p.B)
		if p.A == p.B {
			p.NormA = (p.NormA + p.NormB) / 2
			p.NormB = p.NormA
		}
		if math.Abs(a-p.NormA) > 1e-8 || math.Abs(b-p.NormB) > 1e-8 {
			t.Errorf("%s beside %s: the fitted model says %v, %v; measured %v, %v", p.A, p.B, a, b, p.NormA, p.NormB)
		}
	}
}

// TestProfilePairsInputErrors: a bad jobs file is refused before anything
// runs, naming the file, the line and the field and saying what to do; and
// --pairs' flags are refused without it.
func TestProfilePairsInputErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, yml string
		want      []string
	}{
		{"no-jobs", "jobs: []\n", []string{"no jobs", "list them under jobs:"}},
		{"not-yaml", "jobs: [\n", []string{"jobs file is YAML"}},
		{"no-batch", "jobs:\n  - name: a\n    command: x\n", []string{":2:", "no batch"}},
		{"bad-batch", "jobs:\n  - name: a\n    batch: big\n    command: x\n", []string{":3:", "field batch", `"big"`, "whole number"}},
		{"bad-name", "jobs:\n  - name: a b\n    batch: 1\n    command: x\n", []string{":2:", "field name", "letters, digits"}},
		{"unknown", "jobs:\n  - name: a\n    batch: 1\n    command: x\n    gpus: 2\n", []string{":5:", `field "gpus"`, "name, batch and command only"}},
		{"empty-command", "jobs:\n  - name: a\n    batch: 1\n    command: \"\"\n", []string{":4:", "field command", "give the command"}},
		{"dup", "jobs:\n  - {name: a, batch: 1, command: x}\n  - {name: a, batch: 1, command: y}\n", []string{":3:", "also the job on line 2", "give each job once"}},
	}
	for _, c := range cases {
		path := filepath.Join(dir, c.name+".yaml")
		if err := os.WriteFile(path, []byte(c.yml), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := run(t, "profile", "--pairs", path, "--duration", "1s")
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range append([]string{path}, c.want...) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", c.name, err, w)
			}
		}
	}
	for _, args := range [][]string{{"--duration", "2s"}, {"--device", "cpu"}, {"--logs", dir}} {
		_, err := run(t, append([]string{"profile", "x.jsonl"}, args...)...)
		if err == nil || !strings.Contains(err.Error(), args[0]+" applies to --pairs") {
			t.Errorf("profile %v without --pairs: %v, want it refused", args, err)
		}
	}
	for _, args := range [][]string{{"--format", "json"}, {"--duration", "0s"}, {"--warmup", "0"}} {
		_, err := run(t, append([]string{"profile", "--pairs", "x.yaml"}, args...)...)
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("profile --pairs %v: %v, want it refused naming %s", args, err, args[0])
		}
	}
	// A command that is not a salus client: the run says which job, what it did,
	// and shows its standard error.
	path := filepath.Join(dir, "bad-command.yaml")
	if err := os.WriteFile(path, []byte("jobs:\n  - name: a\n    batch: 1\n    command: echo not a client >&2; exit 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := run(t, "profile", "--pairs", path, "--duration", "1s", "--device", "cpu")
	if err == nil || !strings.Contains(err.Error(), "job a@1 exited (exit status 3)") || !strings.Contains(err.Error(), "line 2 of the jobs file") || !strings.Contains(err.Error(), "not a client") {
		t.Errorf("a job that exits at once: %v", err)
	}
}

// TestPairThroughputCountsFractions: a job's throughput over the window counts
// each iteration by the part of it inside the window.
func TestPairThroughputCountsFractions(t *testing.T) {
	s := &pairSink{}
	s.Emit(eventlog.Event{Kind: eventlog.Arrive, Job: "j"})
	for _, sp := range [][2]float64{{0, 1}, {1, 2}, {2, 3}, {3.5, 4}} {
		s.Emit(eventlog.Event{T: sp[0], Kind: eventlog.IterStart, Job: "j"})
		s.Emit(eventlog.Event{T: sp[1], Kind: eventlog.IterEnd, Job: "j"})
	}
	// [0.5, 3.5]: half of the first, the second, the third, none of the fourth.
	if got := s.throughput("j", 0.5, 3.5); math.Abs(got-2.5/3) > 1e-12 {
		t.Errorf("throughput %g, want %g", got, 2.5/3)
	}
	if got := s.ended("j"); got != 4 {
		t.Errorf("ended %d, want 4", got)
	}
}
