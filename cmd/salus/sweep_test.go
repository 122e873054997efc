package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	for _, f := range []string{"sweep.json", "sweep.csv"} {
		a, err1 := os.ReadFile(filepath.Join(at("one"), f))
		b, err2 := os.ReadFile(filepath.Join(at("merged"), f))
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: the merged shards differ from one sweep (%v, %v)", f, err1, err2)
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
