package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func makespan(t *testing.T, out string) float64 {
	t.Helper()
	var rep struct {
		Runs []struct {
			MakespanS float64 `json:"makespan_s"`
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Runs) != 1 {
		t.Fatalf("json %v: %s", err, out)
	}
	return rep.Runs[0].MakespanS
}

// A simulated run's log, read back: salus report gives its metrics, salus trace
// from-log and salus profile give a trace and a catalog that simulate the same.
func TestLogRoundTrip(t *testing.T) {
	dir := t.TempDir()
	events := filepath.Join(dir, "events.jsonl")
	out, err := run(t, "simulate", "--trace", "../../examples/own-trace.csv", "--catalog", "../../examples/catalog.yaml",
		"--policy", "fifo", "--events", events, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	want := makespan(t, out)

	out, err = run(t, "report", events, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if got := makespan(t, out); math.Abs(got-want) > 1e-5 {
		t.Errorf("salus report: makespan %v, simulate said %v", got, want)
	}
	rep := filepath.Join(dir, "rep")
	if out, err = run(t, "report", events, "--out", rep); err != nil || !strings.Contains(out, "fifo") {
		t.Fatalf("report --out: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(rep, "index.html")); err != nil {
		t.Error(err)
	}

	trace, catalog := filepath.Join(dir, "trace.csv"), filepath.Join(dir, "profile.yaml")
	if _, err := run(t, "trace", "from-log", events, "--out", trace); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "profile", events, "--out", catalog); err != nil {
		t.Fatal(err)
	}
	// A .json name writes JSON, which loads as a catalog too.
	jsonCatalog := filepath.Join(dir, "profile.json")
	if _, err := run(t, "profile", events, "--out", jsonCatalog); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(jsonCatalog); !strings.HasPrefix(string(data), "{") {
		t.Errorf("profile --out x.json wrote:\n%s", data)
	}
	if out, err := run(t, "models", "--catalog", jsonCatalog); err != nil || !strings.Contains(out, "catalog file") {
		t.Errorf("the JSON profile as a catalog: %v", err)
	}
	data, _ := os.ReadFile(catalog)
	if !strings.Contains(string(data), "model: transformer") || !strings.Contains(string(data), "iterations: 2800") {
		t.Errorf("profile:\n%s", data)
	}
	for _, args := range [][]string{
		{"simulate", "--trace", trace, "--policy", "fifo", "-o", "json"},                       // the inline figures
		{"simulate", "--trace", trace, "--catalog", catalog, "--policy", "fifo", "-o", "json"}, // the profile's
	} {
		out, err := run(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if got := makespan(t, out); math.Abs(got-want) > 0.01*want {
			t.Errorf("%v: makespan %.1f s, the original run's %.1f s", args, got, want)
		}
	}
}

func TestFromLogErrors(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "e.jsonl")
	os.WriteFile(empty, []byte(`{"t":0,"ev":"run","policy":"fair"}`+"\n"), 0o644)
	for _, args := range [][]string{{"profile", empty}, {"trace", "from-log", empty}, {"report", empty}} {
		if _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), "e.jsonl: ") || !strings.Contains(err.Error(), "no job") {
			t.Errorf("%v: %v", args, err)
		}
	}
	if _, err := run(t, "profile", "missing.jsonl"); err == nil || !strings.Contains(err.Error(), "missing.jsonl") {
		t.Errorf("missing file: %v", err)
	}
}

// A run's log carries each job's priority: salus report gives the same figures per
// priority class as salus eval, which takes them from the trace.
func TestReportGivesPriorityClasses(t *testing.T) {
	dir := t.TempDir()
	ev, err := run(t, "eval", "--trace", "../../examples/priority-trace.csv", "--policy", "fair", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.jsonl*"))
	if len(logs) != 1 {
		t.Fatalf("eval --out wrote logs %v, want one", logs)
	}
	rep, err := run(t, "report", logs[0])
	if err != nil {
		t.Fatal(err)
	}
	classes := func(out string) string {
		t.Helper()
		i := strings.Index(out, "Per priority class")
		if i < 0 {
			t.Fatalf("no per-priority table in:\n%s", out)
		}
		// The rows' figures, without the scheme's name (the report adds its mode).
		var figures []string
		for _, line := range strings.Split(strings.SplitN(out[i:], "\n\n", 2)[0], "\n")[2:] {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			figures = append(figures, strings.Join(f[max(len(f)-11, 0):], " "))
		}
		return strings.Join(figures, "\n")
	}
	if got, want := classes(rep), classes(ev); got != want {
		t.Errorf("salus report's classes:\n%s\nsalus eval's:\n%s", got, want)
	}
}

// Two logs of one team's jobs, srtf's and pack's (and fifo's), side by side: a
// row each, the ratios to the fifo run, one recommendation, and with --out one
// HTML page drawing every run.
func TestReportPutsSeveralLogsSideBySide(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "team.csv")
	if err := os.WriteFile(trace, []byte("job_id,model,batch_size,iterations,arrival_s\na,alexnet,25,600,0\nb,resnet50,25,100,2\nc,vgg11,25,150,4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs []string
	for _, p := range []string{"fifo", "srtf", "pack"} {
		log := filepath.Join(dir, p+".jsonl")
		if _, err := run(t, "simulate", "--trace", trace, "--policy", p, "--events", log); err != nil {
			t.Fatal(err)
		}
		logs = append(logs, log)
	}
	out, err := run(t, append([]string{"report", "--out", filepath.Join(dir, "out")}, logs...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fifo (exclusive)", "srtf (salus)", "pack (salus)", "1.00x", "Recommendation: pack (salus)", "Times in seconds"} {
		if !strings.Contains(out, want) {
			t.Errorf("the side-by-side report lacks %q:\n%s", want, out)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, "out", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"timeline-fifo", "timeline-srtf", "timeline-pack"} {
		if !strings.Contains(string(page), p) {
			t.Errorf("the page draws no %s", p)
		}
	}
	// The same log twice is two rows, told apart by the file.
	if out, err := run(t, "report", logs[1], logs[1]); err != nil || !strings.Contains(out, "srtf (salus) @ srtf") {
		t.Errorf("one log twice: %v\n%s", err, out)
	}
}

// A daemon that emulated no GPU names none in its log: its jobs ran on their
// own GPU or CPU. The report says so, with no speed, no seed and no paper figure,
// and the simulator's prediction for the same jobs, from what the log measured.
func TestReportOfAnUnemulatedDaemon(t *testing.T) {
	log := filepath.Join(t.TempDir(), "events.jsonl")
	body := `{"t":0,"ev":"run","policy":"fifo","mode":"exclusive","engine":"live","capacity_mib":14336}
{"t":1,"ev":"arrive","job":"lstm","kind":"train","declared_s":1,"persistent_mib":10,"ephemeral_mib":10}
{"t":1,"ev":"admit","job":"lstm","lane":0,"lane_mib":14336}
{"t":1.5,"ev":"iter_start","job":"lstm","lane":0}
{"t":2,"ev":"iter_end","job":"lstm"}
{"t":2,"ev":"iter_start","job":"lstm","lane":0}
{"t":2.5,"ev":"iter_end","job":"lstm"}
{"t":2.5,"ev":"finish","job":"lstm"}
`
	if err := os.WriteFile(log, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "report", log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "device the clients' own GPU or CPU (14336 MiB usable)\n") || strings.Contains(out, "P100") ||
		strings.Contains(out, "seed") {
		t.Errorf("the device or seed of an unemulated daemon's run:\n%s", out)
	}
	if !strings.Contains(out, "The simulator on the same jobs") || !strings.Contains(out, "fifo (exclusive)  ") {
		t.Errorf("no prediction beside the live run:\n%s", out)
	}
}
