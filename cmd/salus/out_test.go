package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --out refuses a folder that holds other files than a salus run's results,
// naming them (a checkout's Go package given by mistake must not be written
// into), unless --reuse-out; a folder a run wrote takes the next run's.
func TestOutRefusesAFolderOfOtherFiles(t *testing.T) {
	dir := t.TempDir()
	pkg := filepath.Join(dir, "sweep")
	if err := os.Mkdir(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "sweep.go"), []byte("package sweep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"eval", "--out", pkg},
		{"sweep", "--seeds", "1", "--load", "1", "--policy", "fifo", "--jobs", "5", "--out", pkg},
	} {
		_, err := run(t, args...)
		if err == nil || !strings.Contains(err.Error(), "sweep.go") || !strings.Contains(err.Error(), "--reuse-out") {
			t.Errorf("salus %v: %v, want it refused naming sweep.go and --reuse-out", args, err)
		}
		if _, err := os.Stat(filepath.Join(pkg, resultsMarker)); err == nil {
			t.Fatalf("salus %v wrote into the refused folder", args)
		}
	}
	if out, err := run(t, "eval", "--out", pkg, "--reuse-out"); err != nil {
		t.Errorf("--reuse-out: %v\n%s", err, out)
	}
	// A results folder takes the next run of any command.
	res := filepath.Join(dir, "results", "eval")
	for i := range 2 {
		if out, err := run(t, "eval", "--out", res); err != nil {
			t.Fatalf("run %d into %s: %v\n%s", i+1, res, err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(res, "results.json")); err != nil {
		t.Error(err)
	}
}
