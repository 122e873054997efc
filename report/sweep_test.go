package report

import (
	"os"
	"strings"
	"testing"

	"github.com/salusgo/salus/sweep"
)

func TestWriteSweep(t *testing.T) {
	dir := t.TempDir()
	cell := func(policy string, jct float64) sweep.Summary {
		return sweep.Summary{Cell: sweep.Cell{Trace: "/data/mine.csv", Policy: policy, Mode: "salus", Load: 2, CapacityMiB: 14336}, Runs: 5,
			Metrics: map[string]sweep.Stat{"avg_jct_s": {N: 5, Mean: jct, CI95: 60}, "jain_slowdown": {N: 5, Mean: 0.5, CI95: 0.01}}}
	}
	res := sweep.Result{Grid: sweep.Grid{Policies: []string{"srtf", "pack"}, Seeds: []int64{1, 2, 3, 4, 5}, Traces: []string{"/data/mine.csv"}, Resample: "bootstrap"},
		Runs: 10, Planned: 10, Cells: []sweep.Summary{cell("srtf", 600), cell("pack", 1200)}}
	res.Recommendations = sweep.Recommend(res.Cells, nil)
	plots, err := sweep.Plot(dir, res.Cells)
	if err != nil {
		t.Fatal(err)
	}
	index, err := WriteSweep(SweepOptions{Dir: dir, Result: res, Plots: plots, Args: []string{"salus", "sweep", "--trace", "/data/mine.csv"}})
	if err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	for _, s := range []string{"10.0 ± 1.0", "0.500 ± 0.010", "<td>mine</td>", "Which scheme?", "On mine at load 2, 14.0 GiB: ",
		"srtf is best with 10.0 ± 1.0 min", "data:image/png;base64,", "avg JCT (min) against load", "bootstrap", "salus sweep --trace /data/mine.csv"} {
		if !strings.Contains(page, s) {
			t.Errorf("index.html lacks %q", s)
		}
	}
}
