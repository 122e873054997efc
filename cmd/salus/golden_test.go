package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden outputs in testdata/golden")

// TestGoldenOutputs pins what the default commands print, so that a refactor that
// must not change behaviour shows any change it makes. After an intended change:
//
//	go test ./cmd/salus -run TestGoldenOutputs -update
func TestGoldenOutputs(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"eval", []string{"eval"}},
		{"eval-all", []string{"eval", "--suite", "all"}},
		{"eval-json", []string{"eval", "--format", "json"}},
		{"eval-csv", []string{"eval", "--format", "csv", "--seed", "2", "--load", "2"}},
		{"simulate-srtf", []string{"simulate", "--policy", "srtf"}},
		{"simulate-h100-fair", []string{"simulate", "--policy", "fair", "--device", "h100"}},
		// Today's rule by name reproduces the outputs from before the
		// co-location model was the default, byte for byte.
		{"eval-rule", []string{"eval", "--interference", "rule"}},
		{"eval-all-rule", []string{"eval", "--suite", "all", "--interference", "rule"}},
		{"eval-json-rule", []string{"eval", "--format", "json", "--interference", "rule"}},
		{"eval-csv-rule", []string{"eval", "--format", "csv", "--seed", "2", "--load", "2", "--interference", "rule"}},
		{"simulate-srtf-rule", []string{"simulate", "--policy", "srtf", "--interference", "rule"}},
		{"simulate-h100-fair-rule", []string{"simulate", "--policy", "fair", "--device", "h100", "--interference", "rule"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := run(t, c.args...)
			if err != nil {
				t.Fatalf("salus %v: %v\n%s", c.args, err, out)
			}
			path := filepath.Join("testdata", "golden", c.name+".txt")
			if *update {
				if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (write it with -update)", err)
			}
			if out != string(want) {
				t.Errorf("salus %v printed something else than %s:\n%s", c.args, path, out)
			}
		})
	}
}
