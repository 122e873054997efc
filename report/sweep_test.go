package report

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/salusgo/salus/plots/layoutcheck"
	"github.com/salusgo/salus/sweep"
)

func TestWriteSweep(t *testing.T) {
	dir := t.TempDir()
	cell := func(policy string, jct float64) sweep.Summary {
		return sweep.Summary{Cell: sweep.Cell{Trace: "/data/mine.csv", Policy: policy, Mode: "salus", Load: 2, CapacityMiB: 14336}, Runs: 5,
			Metrics: map[string]sweep.Stat{"avg_jct_s": {N: 5, Mean: jct, Low: jct - 60, High: jct + 90}, "jain_slowdown": {N: 5, Mean: 0.5, Low: 0.49, High: 0.52}}}
	}
	res := sweep.Result{Grid: sweep.Grid{Policies: []string{"srtf", "pack"}, Seeds: []int64{1, 2, 3, 4, 5}, Traces: []string{"/data/mine.csv"}, Resample: "bootstrap", GPUs: 4},
		Runs: 10, Planned: 10, Cells: []sweep.Summary{cell("srtf", 600), cell("pack", 1200)}}
	res.Recommendations = sweep.Recommend(res.Cells, nil)
	figs, err := sweep.Plot(dir, res.Cells, sweep.PlotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	index, err := WriteSweep(SweepOptions{Dir: dir, Result: res, Figures: figs, Args: []string{"salus", "sweep", "--trace", "/data/mine.csv"}})
	if err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	for _, s := range []string{"10.0 [9.0, 11.5]", "0.500 [0.490, 0.520]", "<td>mine</td>", "<th>GPUs</th>", "<td>4</td>", "Which scheme?",
		"On mine at load 2, 14.0 GiB, GPUs 4: ", "srtf is best with 10.0 min [9.0, 11.5]", "data:image/png;base64,",
		"average JCT at load 2", "one bar per scheme", "across 5 seeds", "BCa bootstrap", "under 10 seeds", "bootstrap", "salus sweep --trace /data/mine.csv"} {
		if !strings.Contains(page, s) {
			t.Errorf("index.html lacks %q", s)
		}
	}
}

// simulatedSweep is a small sweep of the four policies over 5 seeds of
// salus100 at the loads.
func simulatedSweep(t *testing.T, loads []float64) sweep.Result {
	t.Helper()
	g := sweep.Grid{Policies: []string{"fifo", "srtf", "pack", "fair"}, Modes: []string{sweep.DefaultMode}, Seeds: []int64{1, 2, 3, 4, 5},
		Loads: loads, CapacitiesMiB: []float64{14336}, Device: "p100", Jobs: 15}
	cells := g.Cells(sweep.Applicable)
	samples, err := sweep.Run(context.Background(), g.Tasks(cells, nil), 2, sweep.SimRunner(g), nil)
	if err != nil {
		t.Fatal(err)
	}
	res := sweep.Result{Grid: g, Runs: len(samples), Planned: len(samples), Cells: sweep.SummarizeCells(cells, samples)}
	res.Recommendations = sweep.Recommend(res.Cells, samples)
	return res
}

// Every figure of a sweep can be read, as the report's (TestEveryFigureCanBeRead):
// the bar charts of a sweep at one load, the curves of one over several, each
// on a log axis where the spread needs it, and those that --metrics and
// --schemes choose.
func TestEverySweepFigureCanBeRead(t *testing.T) {
	var figs []sweep.Drawn
	for _, loads := range [][]float64{{1}, {0.5, 2}} {
		res := simulatedSweep(t, loads)
		fs, err := sweep.Figures(res.Cells, sweep.PlotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) != len(sweep.Metrics) {
			t.Errorf("loads %v: %d figures, want one per metric (%d)", loads, len(fs), len(sweep.Metrics))
		}
		figs = append(figs, fs...)
		chosen, err := sweep.Figures(res.Cells, sweep.PlotOptions{Metrics: []string{"avg_queuing_s"}, Schemes: []string{"fifo", "pack"}})
		if err != nil || len(chosen) != 1 {
			t.Fatalf("--metrics avg_queuing_s --schemes fifo,pack: %d figures, %v", len(chosen), err)
		}
		figs = append(figs, chosen...)
	}
	bars, curves, logs := 0, 0, 0
	for _, d := range figs {
		problems, texts := layoutcheck.Check(d.Figure)
		for _, p := range problems {
			t.Error(p)
		}
		if strings.Contains(d.Title, "at load") {
			bars++
		} else {
			curves++
		}
		for _, x := range texts {
			if strings.Contains(x.Text, "log scale") {
				logs++
				break
			}
		}
	}
	if bars == 0 || curves == 0 || logs == 0 {
		t.Errorf("checked %d bar charts, %d curve charts, %d on a log axis: want some of each", bars, curves, logs)
	}
}
