package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/internal/browsertest"
	"github.com/salusgo/salus/sweep"
)

// The report renders in a real browser: no script errors, every image
// displayed, nothing fetched from the network, nothing wider than a 1280-pixel
// window (every table's columns fit; the rest are folded away); a screenshot is
// kept.
func TestReportRendersInChromium(t *testing.T) {
	bin := browsertest.Chromium(t)
	_, w := trainingReport(t)
	checkRendered(t, bin, w.Index)
}

// A sweep's page renders as the report does, with its bar charts (one load)
// and its curves (several loads).
func TestSweepReportRendersInChromium(t *testing.T) {
	bin := browsertest.Chromium(t)
	for _, loads := range [][]float64{{1}, {0.5, 2}} {
		dir := t.TempDir()
		res := simulatedSweep(t, loads)
		figs, err := sweep.Plot(dir, res.Cells, sweep.PlotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		index, err := WriteSweep(SweepOptions{Dir: dir, Result: res, Figures: figs, Args: []string{"salus", "sweep"}})
		if err != nil {
			t.Fatal(err)
		}
		checkRendered(t, bin, index)
	}
}

// checkRendered loads the page in the browser and checks it.
func checkRendered(t *testing.T, bin, index string) {
	t.Helper()
	html, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(t.TempDir(), "report.png")
	p := browsertest.Load(t, bin, index, 1280, shot)
	if want := strings.Count(string(html), "<img "); p.Images != want || want == 0 {
		t.Errorf("the browser saw %d images, the page has %d", p.Images, want)
	}
	if len(p.Broken) > 0 {
		t.Errorf("images not displayed: %q", p.Broken)
	}
	if len(p.Errors) > 0 {
		t.Errorf("errors while loading: %q", p.Errors)
	}
	if len(p.Requests) > 0 {
		t.Errorf("the page fetched resources: %q (it must be self-contained)", p.Requests)
	}
	for _, w := range p.Wide {
		t.Errorf("wider than the %d-pixel window: %s", p.Width, w)
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10000 {
		t.Fatalf("screenshot %s missing or blank: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)
}
