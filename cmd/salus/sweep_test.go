package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/sweep"
)

// A sweep run as 3 shards and merged writes byte for byte the sweep.json and
// sweep.csv of one sweep over the whole grid; a merge that lacks a shard says
// which runs are missing and from which shard.
func TestSweepShardsMergeToOneSweep(t *testing.T) {
	dir := t.TempDir()
	grid := []string{"sweep", "--seeds", "2", "--load", "1,2", "--jobs", "4", "--policy", "fifo,pack", "--workers", "2"}
	at := func(name string) string { return filepath.Join(dir, name) }
	if out, err := run(t, append(grid, "--out", at("one"))...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for i, shard := range []string{"0/3", "1/3", "2/3"} {
		if out, err := run(t, append(grid, "--shard", shard, "--out", at("s"+string(rune('0'+i))))...); err != nil {
			t.Fatalf("shard %s: %v\n%s", shard, err, out)
		}
	}
	if out, err := run(t, "sweep", "merge", at("s0"), at("s1"), at("s2"), "--out", at("merged")); err != nil {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	// Byte for byte but for the command that wrote them: the merge's, with the
	// shards' as its parts, against the one sweep's.
	for _, f := range []string{"sweep.json", "sweep.csv"} {
		a, err1 := os.ReadFile(filepath.Join(at("one"), f))
		b, err2 := os.ReadFile(filepath.Join(at("merged"), f))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		a, b = withoutCommand(t, f, a), withoutCommand(t, f, b)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the merged shards differ from one sweep:\n%s\n%s", f, a, b)
		}
	}
	_, err := run(t, "sweep", "merge", at("s0"), at("s2"), "--out", at("partial"))
	if err == nil || !strings.Contains(err.Error(), "shard 1/3") {
		t.Errorf("merging without shard 1: %v, want the missing runs named with their shard", err)
	}
	if _, err := run(t, append(grid, "--shard", "3/3", "--out", at("bad"))...); err == nil || !strings.Contains(err.Error(), "0 <= I < N") {
		t.Errorf("--shard 3/3: %v", err)
	}
}

// withoutCommand is sweep.json or sweep.csv without the commands of its
// provenance.
func withoutCommand(t *testing.T, name string, b []byte) []byte {
	t.Helper()
	if name == "sweep.json" {
		var r sweep.Result
		if err := json.Unmarshal(b, &r); err != nil || r.Grid.Provenance == nil {
			t.Fatalf("%s: %v, provenance %v", name, err, r.Grid.Provenance)
		}
		r.Grid.Provenance.Command, r.Grid.Provenance.Parts = nil, nil
		out, _ := json.Marshal(r)
		return out
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(rows) == 0 || rows[0][len(rows[0])-1] != "command" {
		t.Fatalf("%s: %v, want its last column the command", name, err)
	}
	var out bytes.Buffer
	w := csv.NewWriter(&out)
	for _, r := range rows {
		w.Write(r[:len(r)-1])
	}
	w.Flush()
	return out.Bytes()
}
