package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README's Table 1 row names the command its numbers come from, and they
// are that command's: salus eval --suite paper's medians of FIFO's average JCT
// over SRTF's, FAIR's and PACK's, start-up on the GPU, under the measured pairs
// and under --interference rule. The default eval's one-trace ratio is another
// experiment, and says so where it is printed (TestEvalSaysWhatItsPaperRatioIs).
func TestReadmeTable1IsThePaperSuites(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "| Table 1, average JCT over FIFO's") {
			row = l
		}
	}
	if !strings.Contains(row, "`salus eval --suite paper`") || !strings.Contains(row, "start-up on the GPU") {
		t.Fatalf("the README's Table 1 row does not name the command and settings its numbers come from:\n%s", row)
	}
	cells := strings.Split(row, "|")
	if len(cells) < 6 {
		t.Fatalf("the README's Table 1 row has %d cells:\n%s", len(cells), row)
	}
	for i, args := range [][]string{{"eval", "--suite", "paper", "-o", "json"}, {"eval", "--suite", "paper", "-o", "json", "--interference", "rule"}} {
		out, err := run(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var rep struct {
			Sections []struct {
				Rows []struct{ Figure, Row, Column, Ours string }
			}
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		ours := map[string]string{}
		for _, s := range rep.Sections {
			for _, r := range s.Rows {
				if r.Figure == "Table 1 (ratio)" && r.Column == "start-up on GPU" {
					ours[r.Row] = r.Ours
				}
			}
		}
		want := ours["FIFO/SRTF avg JCT"] + "x, " + ours["FIFO/FAIR avg JCT"] + "x, " + ours["FIFO/PACK avg JCT"] + "x"
		if got := strings.TrimSpace(cells[3+i]); got != want {
			t.Errorf("the README's Table 1 row says %q (%v), the command gives %q", got, args, want)
		}
	}
}

// The default eval's ratio is of one trace, one seed, the start-up off the GPU:
// the line that prints it says so, and where the README's figure comes from.
func TestEvalSaysWhatItsPaperRatioIs(t *testing.T) {
	for args, want := range map[string][]string{
		"eval":                  {"on this one trace (paper, seed 1; start-up off the GPU", "salus eval --suite paper's median over seeds 1 to 10, start-up on the GPU"},
		"eval --startup-on-gpu": {"on this one trace (paper, seed 1; start-up on the GPU)"},
		"eval --seed 3":         {"on this one trace (paper, seed 3; start-up off the GPU"},
	} {
		out, err := run(t, strings.Fields(args)...)
		if err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		flat := strings.Join(strings.Fields(out), " ")
		for _, w := range want {
			if !strings.Contains(flat, w) {
				t.Errorf("salus %s does not say %q:\n%s", args, w, out[max(0, len(out)-500):])
			}
		}
	}
}
