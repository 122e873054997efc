package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/workload/traceimport"
	"github.com/spf13/pflag"
)

// importFixtures are the importer's hand-written fixtures, one or two files per format.
var importFixtures = map[string][]string{
	"alibaba2023": {"openb_pod_list_sample.csv"},
	"pai2020":     {"pai_task_table.csv", "pai_job_table.csv"},
	"philly":      {"cluster_job_log.json"},
	"helios":      {"cluster_log.csv"},
	"tiresias":    {"tiresias_jobs.csv"},
	"sia":         {"sia_workload.csv"},
}

// TestImportOutputValidates: every format's import, CSV and JSON Lines, is a trace
// salus trace validate accepts, and the drop summary goes to standard error.
func TestImportOutputValidates(t *testing.T) {
	for format, files := range importFixtures {
		for _, ext := range []string{".csv", ".jsonl"} {
			t.Run(format+ext, func(t *testing.T) {
				out := filepath.Join(t.TempDir(), format+ext)
				args := []string{"trace", "import", "--format", format, "--out", out}
				if format == "sia" {
					// The fixture's ncf row has no length of its own.
					args = append(args, "--length", "ncf=900")
				}
				for _, f := range files {
					args = append(args, filepath.Join("..", "..", "workload", "traceimport", "testdata", f))
				}
				msg, err := run(t, args...)
				if err != nil {
					t.Fatalf("import: %v\n%s", err, msg)
				}
				if !strings.Contains(msg, "imported ") {
					t.Errorf("no summary:\n%s", msg)
				}
				msg, err = run(t, "trace", "validate", out)
				if err != nil || !strings.Contains(msg, "ok") {
					t.Errorf("validate: %v\n%s", err, msg)
				}
			})
		}
	}
}

func TestImportToStdoutAndSimulate(t *testing.T) {
	fixture := filepath.Join("..", "..", "workload", "traceimport", "testdata", "openb_pod_list_sample.csv")
	root := newRoot()
	var stdout, stderr strings.Builder
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs([]string{"trace", "import", "--format", "alibaba2023", fixture})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stdout.String(), "job_id,model,batch_size,iterations,arrival_s") {
		t.Errorf("standard output should hold the trace alone:\n%s", stdout.String())
	}
	for _, want := range []string{"imported 4 jobs from 7 rows; dropped 3", "no GPU requested", "never ran", "shorter than its profile's start-up"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, stderr.String())
		}
	}
	trace := filepath.Join(t.TempDir(), "openb.csv")
	if err := os.WriteFile(trace, []byte(stdout.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// The fixture has a pod of 8 GPUs: a node of 8, as in the cluster.
	if out, err := run(t, "simulate", "--trace", trace, "--policy", "fifo", "--gpus", "8"); err != nil || !strings.Contains(out, "4 jobs") {
		t.Errorf("simulate: %v\n%s", err, out)
	}
}

func TestImportErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("name,num_gpu,gpu_milli,creation_time,deletion_time,scheduled_time\np1,1,lots,1,2,1\n"), 0o644)
	out := filepath.Join(dir, "out.csv")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{bad}, "--format"},
		{[]string{"--format", "borg", bad}, "alibaba2023, helios, pai2020, philly, sia, tiresias"},
		{[]string{"--format", "alibaba2023", bad, bad}, "reads FILE"},
		{[]string{"--format", "alibaba2023", "--batch", "50", bad}, "--batch 50 needs --model"},
		{[]string{"--format", "alibaba2023", "--device", "k80", bad}, `--device: unknown device "k80": choose one of p100, `},
		{[]string{"--format", "alibaba2023", "--since", "tuesday", bad}, "--since"},
		{[]string{"--format", "alibaba2023", "--output-format", "xml", bad}, "--output-format"},
		{[]string{"--format", "alibaba2023", "--out", out, bad}, `bad.csv:2: field "gpu_milli": "lots" is not a number`},
	} {
		msg, err := run(t, append([]string{"trace", "import"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: want an error with %q, got %v\n%s", c.args, c.want, err, msg)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed import should leave no --out file: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a failed import left files behind: %v", entries)
	}
}

// importGPUFor resolves a source's GPU types with the device presets: the
// importer's own tests stand in for it with these figures (testGPUFor in
// workload/traceimport).
func TestImportGPUForIsThePresets(t *testing.T) {
	for typ, want := range map[string]struct {
		gpu     traceimport.GPU
		unknown bool
	}{
		"":        {gpu: traceimport.GPU{Name: "P100", CapacityMiB: 14336, Speed: 1}},
		"P100":    {gpu: traceimport.GPU{Name: "P100", CapacityMiB: 14336, Speed: 1}},
		"V100M16": {gpu: traceimport.GPU{Name: "V100-16GB", CapacityMiB: 14336, Speed: 1.4}},
		"V100M32": {gpu: traceimport.GPU{Name: "V100-32GB", CapacityMiB: 28672, Speed: 1.4}},
		"V100":    {gpu: traceimport.GPU{Name: "V100-32GB", CapacityMiB: 28672, Speed: 1.4}},
		"T4":      {gpu: traceimport.GPU{Name: "T4", CapacityMiB: 14336, Speed: 0.58}},
		"A100":    {gpu: traceimport.GPU{Name: "A100-80GB", CapacityMiB: 71680, Speed: 3}},
		"MISC":    {gpu: traceimport.GPU{Name: "MISC", CapacityMiB: 14336, Speed: 1}, unknown: true},
	} {
		got, err := importGPUFor(typ)
		if got != want.gpu || (err != nil) != want.unknown {
			t.Errorf("importGPUFor(%q) = %+v, %v: want %+v (unknown %v)", typ, got, err, want.gpu, want.unknown)
		}
	}
	// The summary warns of the fixture's MISC row, taken at the P100's figures.
	var args []string
	for _, f := range importFixtures["pai2020"] {
		args = append(args, filepath.Join("..", "..", "workload", "traceimport", "testdata", f))
	}
	msg, err := run(t, append([]string{"trace", "import", "--format", "pai2020", "--out", filepath.Join(t.TempDir(), "pai.csv")}, args...)...)
	if err != nil || !strings.Contains(msg, `warning: 1 jobs on GPU type "MISC": GPU "MISC" is no model the device presets know`) ||
		!strings.Contains(msg, "at speed 1") {
		t.Errorf("import: %v; the summary should warn of MISC:\n%s", err, msg)
	}
}

func TestImportThatKeepsNothingSaysWhy(t *testing.T) {
	fixture := filepath.Join("..", "..", "workload", "traceimport", "testdata", "cluster_log.csv")
	msg, err := run(t, "trace", "import", "--format", "helios", "--status", "TIMEOUT", fixture)
	if err == nil || !strings.Contains(err.Error(), "no job was kept") {
		t.Fatalf("want the no-job error, got %v", err)
	}
	if !strings.Contains(msg, "status not in --status") {
		t.Errorf("the summary should say why:\n%s", msg)
	}
}

// Every flag of trace import changes what it writes, or is refused naming itself.
func TestTraceImportFlagsActOrAreRefused(t *testing.T) {
	fixture := filepath.Join("..", "..", "workload", "traceimport", "testdata", "openb_pod_list_sample.csv")
	bad := filepath.Join(t.TempDir(), "bad.csv")
	good, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(bad, append(good, []byte("p9,1,1,1,lots,,BE,Succeeded,10,20,10\n")...), 0o644)
	base := []string{"trace", "import", "--format", "alibaba2023"}
	cases := []flagCase{
		{flag: "format", args: []string{"--format", "borg"}, refused: "borg"},
		{flag: "out", args: []string{"--out", filepath.Join(t.TempDir(), "x.csv")}},
		{flag: "output-format", args: []string{"--output-format", "jsonl"}},
		{flag: "device", args: []string{"--device", "h100"}},
		{flag: "model", args: []string{"--model", "resnet50", "--batch", "50"}},
		{flag: "batch", args: []string{"--batch", "50"}, refused: "needs --model"},
		{flag: "memory", args: []string{"--memory", "request"}},
		{flag: "since", args: []string{"--since", "1100"}},
		{flag: "until", args: []string{"--until", "1400"}},
		{flag: "limit", args: []string{"--limit", "1"}},
		{flag: "status", args: []string{"--status", "Running"}},
		{flag: "qos", args: []string{"--qos", "LS"}},
		{flag: "max-gpus", args: []string{"--max-gpus", "4"}},
		{flag: "short", args: []string{"--short", "keep"}},
		// The fixture has no censored pod, nor a row without a length: what the two
		// do is in TestImportCensoredAndLengthFlags; here, a bad value is refused.
		{flag: "censored", args: []string{"--censored", "maybe"}, refused: "--censored"},
		{flag: "length", args: []string{"--length", "ncf=soon"}, refused: "--length"},
		{flag: "gpu-models", args: []string{"--gpu-models"}},
		// What --cluster does is in TestTraceClusterImportAndStudy.
		{flag: "cluster", args: []string{"--cluster", filepath.Join(t.TempDir(), "none.yaml")}, refused: "--cluster"},
	}
	baseOut, err := run(t, append(base, fixture)...)
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{"skip-bad": true}
	for _, c := range cases {
		covered[c.flag] = true
		checkFlagCase(t, c, append(append(append([]string(nil), base...), c.args...), fixture), baseOut)
	}
	if _, err := run(t, append(base, bad)...); err == nil {
		t.Error("a malformed row should fail the import")
	}
	if out, err := run(t, append(base, "--skip-bad", bad)...); err != nil || !strings.Contains(out, "malformed (--skip-bad)") {
		t.Errorf("--skip-bad: %v\n%s", err, out)
	}
	cmd, _, err := newRoot().Find([]string{"trace", "import"})
	if err != nil {
		t.Fatal(err)
	}
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && !covered[f.Name] {
			t.Errorf("salus trace import --%s: no case says what it does", f.Name)
		}
	})
}

// --censored keep runs the jobs the trace cut to the cut; --length sizes Sia's
// rows; --max-gpus drops the wide; a file of another format is named as such.
func TestImportCensoredAndLengthFlags(t *testing.T) {
	dir := filepath.Join("..", "..", "workload", "traceimport", "testdata")
	openb := filepath.Join(dir, "openb_pod_list_cut.csv")
	msg, err := run(t, "trace", "import", "--format", "alibaba2023", openb)
	if err != nil || !strings.Contains(msg, "censored: still running when the trace was cut") {
		t.Errorf("default: %v\n%s", err, msg)
	}
	msg, err = run(t, "trace", "import", "--format", "alibaba2023", "--censored", "keep", "--max-gpus", "4", openb)
	if err != nil || !strings.Contains(msg, "note: 1 kept jobs were still running when the trace was cut") || !strings.Contains(msg, "wider than --max-gpus") {
		t.Errorf("--censored keep --max-gpus 4: %v\n%s", err, msg)
	}
	sia := filepath.Join(dir, "sia_workload_pollux.csv")
	if _, err := run(t, "trace", "import", "--format", "sia", sia); err == nil || !strings.Contains(err.Error(), "--length") {
		t.Errorf("sia without --length: want an error naming --length, got %v", err)
	}
	msg, err = run(t, "trace", "import", "--format", "sia", "--length", "cifar10=1800,imagenet=36000,ncf=900,bert=3600,deepspeech2=7200,yolov3=14400", sia)
	if err != nil || !strings.Contains(msg, "imported 6 jobs") {
		t.Errorf("sia --length: %v\n%s", err, msg)
	}
	if _, err := run(t, "trace", "import", "--format", "pai2020", filepath.Join(dir, "openb_pod_list_sample.csv")); err == nil || !strings.Contains(err.Error(), "--format alibaba2023") {
		t.Errorf("a pod list as pai2020: want it named as alibaba2023, got %v", err)
	}
}
