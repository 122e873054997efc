package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/salusgo/salus/provenance"
	"github.com/salusgo/salus/sweep"
)

// results.json carries where it came from: the version and commit (the key
// present, empty when the build recorded none, as under go test), the command
// line, the trace's sha256 (of the file's bytes) and the seed.
func TestResultsJSONCarriesProvenance(t *testing.T) {
	dir := t.TempDir()
	trace, out := "../../examples/own-trace.csv", filepath.Join(dir, "out")
	if text, err := run(t, "eval", "--trace", trace, "--catalog", "../../examples/catalog.yaml", "--policy", "fifo,srtf", "--out", out); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(raw["provenance"], &p); err != nil {
		t.Fatalf("results.json has no provenance: %v\n%s", err, b)
	}
	for _, key := range []string{"version", "commit", "go", "command", "seeds", "traces", "interference"} {
		if _, ok := p[key]; !ok {
			t.Errorf("results.json's provenance lacks %q:\n%s", key, raw["provenance"])
		}
	}
	var rec provenance.Record
	if err := json.Unmarshal(raw["provenance"], &rec); err != nil {
		t.Fatal(err)
	}
	sum, err := provenance.FileSHA256(trace)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Traces) != 1 || rec.Traces[0].SHA256 != sum || rec.Traces[0].Of != provenance.OfFile || rec.Traces[0].Path != trace {
		t.Errorf("results.json's traces %+v; want %s with the sha256 of its bytes %s", rec.Traces, trace, sum)
	}
	if !slices.Equal(rec.Seeds, []int64{1}) || rec.Version == "" || rec.Interference.Name != "measured" {
		t.Errorf("results.json's provenance: %+v", rec)
	}
	if cmd := strings.Join(rec.Command, " "); !strings.HasPrefix(cmd, "salus eval ") || !strings.Contains(cmd, "--trace="+trace) || !strings.Contains(cmd, "--policy=srtf") {
		t.Errorf("results.json's command %q; want salus eval with its flags", cmd)
	}
	if _, ok := raw["runs"]; !ok {
		t.Errorf("results.json lost the report's own fields:\n%.400s", b)
	}
}

// sweep.csv carries the provenance on every line (the same on each: a plain
// CSV); the shards of one sweep merge with it, the shards' commands as its
// parts; a shard of another co-location model is refused, and so is a resume
// after the trace file changed.
func TestSweepProvenanceAndMerge(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.csv")
	if _, err := run(t, "trace", "gen", "--kind", "salus100", "--jobs", "6", "--out", trace); err != nil {
		t.Fatal(err)
	}
	sw := func(out string, extra ...string) error {
		args := append([]string{"sweep", "--trace", trace, "--seeds", "2", "--load", "1", "--policy", "fifo,srtf", "--workers", "2", "--out", filepath.Join(dir, out)}, extra...)
		text, err := run(t, args...)
		if err != nil {
			t.Logf("%s", text)
		}
		return err
	}
	for i, s := range []string{"0/2", "1/2"} {
		if err := sw("s"+string(rune('0'+i)), "--shard", s); err != nil {
			t.Fatal(err)
		}
	}
	if err := sw("other", "--shard", "1/2", "--interference", "rule"); err != nil {
		t.Fatal(err)
	}
	merged := filepath.Join(dir, "merged")
	if _, err := run(t, "sweep", "merge", filepath.Join(dir, "s0"), filepath.Join(dir, "s1"), "--out", merged); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(merged, sweep.CSVFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("sweep.csv is not a plain CSV: %v", err)
	}
	sum, err := provenance.FileSHA256(trace)
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, name := range []string{"salus_version", "salus_commit", "trace_sha256", "seeds", "interference", "command"} {
		if _, ok := col[name]; !ok {
			t.Fatalf("sweep.csv has no column %s: %v", name, rows[0])
		}
	}
	if len(rows) < 3 {
		t.Fatalf("sweep.csv has %d lines", len(rows))
	}
	for _, r := range rows[1:] {
		if r[col["trace_sha256"]] != sum || r[col["seeds"]] != "1;2" || r[col["interference"]] != "measured" || !strings.HasPrefix(r[col["command"]], "salus sweep merge ") {
			t.Errorf("sweep.csv line %v: want the trace's sha256 %s, seeds 1;2, the measured model and the merge's command", r, sum)
		}
	}
	var res sweep.Result
	b, err := os.ReadFile(filepath.Join(merged, sweep.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if p := res.Grid.Provenance; p == nil || len(p.Parts) != 2 || !slices.Contains(p.Parts[1], "--shard=1/2") {
		t.Errorf("sweep.json's provenance %+v: want the two shards' commands as its parts", p)
	}
	_, err = run(t, "sweep", "merge", filepath.Join(dir, "s0"), filepath.Join(dir, "other"), "--out", filepath.Join(dir, "bad"))
	if err == nil || !strings.Contains(err.Error(), "co-location models differ") {
		t.Errorf("merging shards of two co-location models: %v; want it refused, saying so", err)
	}
	// The trace file changes under a sweep to resume: refused.
	if err := os.WriteFile(trace, append(mustRead(t, trace), []byte("\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = run(t, "sweep", "--resume", filepath.Join(dir, "s0"))
	if err == nil || !strings.Contains(err.Error(), "traces differ") {
		t.Errorf("resuming a sweep whose trace file changed: %v; want it refused, saying so", err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
