package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/internal/browsertest"
	"github.com/salusgo/salus/plots/layoutcheck"
	"github.com/salusgo/salus/report"
)

// The report a team reads after a live run of three short jobs, srtf's and
// pack's logs side by side: times in seconds, a row per run, the simulator's
// prediction for the same jobs beside each, the device named as what ran (no
// P100, no seed, no empty paper table), every chart readable (axes labelled, no
// text on text or on the data, job names on the timelines), and the page, in
// headless Chromium, with every image shown and nothing wider than the window.
func TestLiveRunReport(t *testing.T) {
	if testing.Short() {
		t.Skip("runs worker processes for a few seconds")
	}
	t.Setenv("SALUS_CMD_TEST_WORKER", "1")
	dir := t.TempDir()
	trace := filepath.Join(dir, "team.csv")
	if err := os.WriteFile(trace, []byte("job_id,model,batch_size,iterations,arrival_s,iter_s,startup_s,persistent_mib,ephemeral_mib,demand\n"+
		"lm-small,lstm,32,40,0,0.02,0.1,500,500,0.6\nlm-medium,lstm,64,60,0.2,0.03,0.1,800,700,0.7\nlm-large,lstm,128,50,0.4,0.05,0.1,1200,900,0.8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "live")
	if o, err := run(t, "replay", "--trace", trace, "--policy", "srtf,pack", "--out", out); err != nil {
		t.Fatalf("%v\n%s", err, o)
	}
	logs := []string{filepath.Join(out, "events-live-srtf.jsonl.gz"), filepath.Join(out, "events-live-pack.jsonl.gz")}
	page := filepath.Join(dir, "report")
	text, err := run(t, append([]string{"report", "--out", page}, logs...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	t.Log("\n" + text)
	for _, want := range []string{"Times in seconds", "srtf (salus)", "pack (salus)",
		"The simulator on the same jobs", "sim makespan (s)", "completion order"} {
		if !strings.Contains(text, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if strings.Count(text, "srtf (salus)") < 2 || strings.Count(text, "pack (salus)") < 2 {
		t.Errorf("want each run in the results and in the prediction")
	}
	if strings.Contains(text, "seed 0") {
		t.Errorf("the report of a live run names a seed")
	}
	html, err := os.ReadFile(filepath.Join(page, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, not := range []string{"<caption>paper</caption>", "<td>seed</td>"} {
		if strings.Contains(string(html), not) {
			t.Errorf("the page of a live run shows %s", not)
		}
	}

	// Every chart of the page, drawn again from the same report, can be read.
	rep, err := reportFromLogs(logs)
	if err != nil {
		t.Fatal(err)
	}
	if err := predictLive(rep); err != nil {
		t.Fatal(err)
	}
	w, err := report.Write(report.Options{Dir: t.TempDir(), Results: rep})
	if err != nil {
		t.Fatal(err)
	}
	timelines := 0
	for _, f := range w.Figures {
		problems, texts := layoutcheck.Check(f)
		for _, p := range problems {
			t.Error(p)
		}
		if strings.HasPrefix(f.Name, "timeline-") {
			timelines++
			for _, job := range []string{"lm-small", "lm-medium", "lm-large", "time (s)"} {
				if !layoutcheck.Has(texts, job) {
					t.Errorf("%s does not show %q", f.Name, job)
				}
			}
		}
	}
	if timelines != 2 {
		t.Errorf("%d timelines, want one per run", timelines)
	}

	bin := browsertest.Chromium(t)
	p := browsertest.Load(t, bin, filepath.Join(page, "index.html"), 1280, "")
	if p.Images == 0 || len(p.Broken) > 0 || len(p.Errors) > 0 {
		t.Errorf("in Chromium: %d images, not shown %q, errors %q", p.Images, p.Broken, p.Errors)
	}
	for _, wide := range p.Wide {
		t.Errorf("wider than the %d-pixel window: %s", p.Width, wide)
	}
}
