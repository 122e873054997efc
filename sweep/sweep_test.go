package sweep

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// A known case: 1..5 has mean 3 and sample SD sqrt(2.5); its values are
// symmetric, so the bootstrap interval is about symmetric around 3, within the
// values, and about as wide as Student's t's (3 ± 1.96).
func TestConfidenceIntervalKnownCase(t *testing.T) {
	s := Summarize([]float64{1, 2, 3, 4, 5})
	if s.N != 5 || s.Mean != 3 || math.Abs(s.SD-math.Sqrt(2.5)) > 1e-12 {
		t.Fatalf("got %+v", s)
	}
	if s.Low < 1 || s.High > 5 || math.Abs((3-s.Low)-(s.High-3)) > 0.15 || s.High-s.Low < 2.5 || s.High-s.Low > 4.5 {
		t.Errorf("interval [%.4f, %.4f]: want about 3 ± 1.96, within [1, 5]", s.Low, s.High)
	}
	if s := Summarize([]float64{7}); s.Low != 7 || s.High != 7 || s.Mean != 7 {
		t.Errorf("one sample: %+v", s)
	}
}

// Intervals shrink as seeds are added: on the simulator's own runs, and for
// values of a fixed spread.
func TestIntervalsShrinkWithSeeds(t *testing.T) {
	g := Grid{Policies: []string{"pack"}, Modes: []string{DefaultMode}, Loads: []float64{1}, CapacitiesMiB: []float64{14336}, Device: "p100", Jobs: 40}
	run := SimRunner(g)
	cell := g.Cells(Applicable)[0]
	var jcts []float64
	var widths []float64
	for seed := int64(1); seed <= 64; seed++ {
		m, err := run(cell, seed)
		if err != nil {
			t.Fatal(err)
		}
		jcts = append(jcts, m["avg_jct_s"])
		if n := len(jcts); n == 4 || n == 16 || n == 64 {
			st := Summarize(jcts)
			widths = append(widths, st.High-st.Low)
		}
	}
	if !(widths[0] > widths[1] && widths[1] > widths[2]) {
		t.Errorf("95%% interval of pack's avg JCT over 4, 16, 64 seeds: %v wide; want it to shrink", widths)
	}
	alternating := func(n int) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(10 + 2*(i%2))
		}
		return xs
	}
	// Values of a fixed spread: the width shrinks as the seeds double, as
	// 1/sqrt(n) does once the seeds are many.
	prev := math.Inf(1)
	var scaled []float64
	for _, n := range []int{5, 10, 20, 40, 80} {
		st := Summarize(alternating(n))
		w := st.High - st.Low
		if w >= prev {
			t.Errorf("n=%d: the interval, %v wide, did not shrink from %v", n, w, prev)
		}
		prev = w
		scaled = append(scaled, w*math.Sqrt(float64(n)))
	}
	if r := scaled[4] / scaled[2]; r < 0.8 || r > 1.25 {
		t.Errorf("width x sqrt(n) at 20, 40, 80 values: %v; want about constant", scaled[2:])
	}
}

func TestCellsSkipsModesAPolicyLacks(t *testing.T) {
	g := Grid{Policies: []string{"fifo", "pack"}, Modes: []string{DefaultMode, "salus", "exclusive", "mps", "suspend"}, Loads: []float64{1}, CapacitiesMiB: []float64{1}}
	cells := g.Cells(Applicable)
	want := []Cell{{Policy: "fifo", Mode: "exclusive", Load: 1, CapacityMiB: 1}, {Policy: "fifo", Mode: "mps", Load: 1, CapacityMiB: 1},
		{Policy: "fifo", Mode: "suspend", Load: 1, CapacityMiB: 1}, {Policy: "pack", Mode: "salus", Load: 1, CapacityMiB: 1}}
	if len(cells) != len(want) || cells[0] != want[0] || cells[1] != want[1] || cells[2] != want[2] || cells[3] != want[3] {
		t.Errorf("cells %v, want %v", cells, want)
	}
}

// An interrupted sweep keeps what finished; resuming runs only the rest and
// ends with the same statistics as one uninterrupted sweep.
func TestInterruptAndResume(t *testing.T) {
	g := Grid{Policies: []string{"fifo", "srtf"}, Modes: []string{DefaultMode}, Seeds: []int64{1, 2, 3}, Loads: []float64{1, 2},
		CapacitiesMiB: []float64{14336}, Device: "p100", Jobs: 20}
	cells := g.Cells(Applicable)
	full, err := Run(context.Background(), g.Tasks(cells, nil), 2, SimRunner(g), nil)
	if err != nil || len(full) != 12 {
		t.Fatalf("full sweep: %d samples, %v", len(full), err)
	}

	dir := t.TempDir()
	if err := WriteGrid(dir, g); err != nil {
		t.Fatal(err)
	}
	j, err := OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	got, err := Run(ctx, g.Tasks(cells, nil), 1, SimRunner(g), func(s Sample) {
		if err := j.Add(s); err != nil {
			t.Error(err)
		}
		if n++; n == 5 {
			cancel()
		}
	})
	j.Close()
	if err != context.Canceled || len(got) < 5 || len(got) >= 12 {
		t.Fatalf("interrupted sweep: %d samples, %v", len(got), err)
	}
	// A run killed while writing its line leaves half a line behind.
	f, _ := os.OpenFile(filepath.Join(dir, SamplesFile), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"policy":"fifo","mo`)
	f.Close()

	g2, done, err := Load(dir)
	if err != nil || len(done) != len(got) {
		t.Fatalf("load: %d samples (want %d), %v", len(done), len(got), err)
	}
	j, err = OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	rest, err := Run(context.Background(), g2.Tasks(g2.Cells(Applicable), done), 2, SimRunner(g2), func(s Sample) { j.Add(s) })
	j.Close()
	if err != nil || len(done)+len(rest) != 12 {
		t.Fatalf("resume: %d + %d samples, %v", len(done), len(rest), err)
	}
	_, all, err := Load(dir)
	if err != nil || len(all) != 12 {
		t.Fatalf("reload: %d samples, %v", len(all), err)
	}
	a, b := SummarizeCells(cells, full), SummarizeCells(cells, all)
	for i := range a {
		for m, s := range a[i].Metrics {
			if math.Abs(b[i].Metrics[m].Mean-s.Mean) > 1e-9 || b[i].Metrics[m].Low != s.Low || b[i].Metrics[m].High != s.High {
				t.Errorf("%v %s: resumed %+v, uninterrupted %+v", a[i].Cell, m, b[i].Metrics[m], s)
			}
		}
	}
	if err := WriteResults(dir, Result{Grid: g, Cells: b}); err != nil {
		t.Fatal(err)
	}
	if figs, err := Plot(dir, b, PlotOptions{}); err != nil || len(figs) != len(Metrics) || len(figs[0].Files) != 2 {
		t.Errorf("plots: %v, %v", figs, err)
	}
}
