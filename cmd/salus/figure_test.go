package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// salus figure draws one of the paper's figures alone into --out: the PNG,
// the SVG and the CSV of what it drew, the paper's values among them; an
// unknown figure is refused before anything runs.
func TestFigureWritesThePaperBesideOurs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fig11")
	out, err := run(t, "figure", "11", "--out", dir)
	if err != nil {
		t.Fatalf("salus figure 11: %v\n%s", err, out)
	}
	for _, name := range []string{"fig11.png", "fig11.svg", "fig11.csv"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	f, err := os.Open(filepath.Join(dir, "fig11.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	paper := false
	for _, r := range rows[1:] {
		if r[0] == "PACK, paper" && r[1] == "superres_128 x300" && r[2] == "201.5" {
			paper = true
		}
	}
	if !paper {
		t.Errorf("fig11.csv lacks the paper's PACK makespan of superres (201.5 min):\n%v", rows)
	}
	if _, err := run(t, "figure", "9", "--out", filepath.Join(t.TempDir(), "x")); err == nil || !strings.Contains(err.Error(), "table1, 7, 11") {
		t.Errorf("salus figure 9: %v, want a refusal naming the figures", err)
	}
}
