package eval

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
)

// paceLog writes a live run's log: one cnn job of 8 iterations, each d long.
func paceLog(t *testing.T, name string, d float64) string {
	t.Helper()
	var b bytes.Buffer
	evs := []eventlog.Event{{T: 0, Kind: eventlog.Run, Policy: "fifo", Engine: "live"}, {T: 0, Kind: eventlog.Arrive, Job: "j", Model: "cnn", Batch: 64}}
	for i := range 8 {
		s := float64(i) * d
		evs = append(evs, eventlog.Event{T: s, Kind: eventlog.IterStart, Job: "j"}, eventlog.Event{T: s + d, Kind: eventlog.IterEnd, Job: "j"})
	}
	evs = append(evs, eventlog.Event{T: 8 * d, Kind: eventlog.Finish, Job: "j"})
	for _, e := range evs {
		b.Write(eventlog.Append(nil, e))
		b.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Iteration times alone that moved 50% across two runs make a 10% lead noise:
// no recommendation from it, and a warning; a 5% move leaves it standing.
func TestNoiseJudgesTheLead(t *testing.T) {
	n, err := NoiseOfLogs([]string{paceLog(t, "a", 0.1), paceLog(t, "b", 0.15)})
	if err != nil {
		t.Fatal(err)
	}
	if n.Spread < 0.49 || n.Spread > 0.51 || n.Runs != 2 || !strings.HasPrefix(n.Type, "cnn/64") {
		t.Fatalf("noise %+v: want 50%% on cnn/64 over 2 runs", n)
	}
	cands := []Candidate{
		{Scheme: "fifo", Metrics: map[string]Estimate{"makespan_s": {Mean: 100}}},
		{Scheme: "srtf", Metrics: map[string]Estimate{"makespan_s": {Mean: 90}}},
	}
	rec := RecommendNoisy(cands, metrics.TimeUnit{Name: "s", Scale: 1}, n)
	if !strings.Contains(rec, "within the machine's noise") || strings.Contains(rec, "Recommendation: srtf") {
		t.Errorf("recommendation %q: want the 10%% lead within the noise", rec)
	}
	if w := BusyWarning(n, cands); !strings.Contains(w, "machine was busy") || !strings.Contains(w, "makespan (10.0%)") {
		t.Errorf("warning %q: want the busy machine and the lead it exceeds", w)
	}
	small, err := NoiseOfLogs([]string{paceLog(t, "a", 0.1), paceLog(t, "b", 0.105)})
	if err != nil {
		t.Fatal(err)
	}
	if rec := RecommendNoisy(cands, metrics.TimeUnit{Name: "s", Scale: 1}, small); !strings.Contains(rec, "Recommendation: srtf") || BusyWarning(small, cands) != "" {
		t.Errorf("noise %.3f: %q: want srtf recommended, no warning", small.Spread, rec)
	}
}

// Repeats pair by repeat: a lead in every repeat is clear of zero; one that
// changes sides is within the noise. Intervals hold their means.
func TestSummarizeRepeats(t *testing.T) {
	res := func(m float64) metrics.Result { return metrics.Result{MakespanS: m, AvgJCTS: m / 2, P95JCTS: m} }
	runs := []map[string]metrics.Result{
		{"fifo": res(100), "srtf": res(80)}, {"fifo": res(130), "srtf": res(105)}, {"fifo": res(90), "srtf": res(72)},
	}
	r := Summarize([]string{"fifo", "srtf"}, runs, Noise{}, metrics.TimeUnit{Name: "s", Scale: 1})
	if r.N != 3 || len(r.Schemes) != 2 || r.Schemes[0].Repeats != 3 {
		t.Fatalf("%+v", r)
	}
	for _, s := range r.Schemes {
		e := s.Metrics["makespan_s"]
		if !(e.Low <= e.Mean && e.Mean <= e.High) || len(s.PerRun["makespan_s"]) != 3 {
			t.Errorf("%s: %+v: want the mean within its interval, 3 values", s.Scheme, e)
		}
	}
	if !strings.Contains(r.Recommendation, "repeat by repeat (3 paired runs)") || !strings.Contains(r.Recommendation, "Recommendation: srtf") {
		t.Errorf("%s", r.Recommendation)
	}
	runs[1]["srtf"] = res(140) // srtf behind in one repeat
	r = Summarize([]string{"fifo", "srtf"}, runs, Noise{}, metrics.TimeUnit{Name: "s", Scale: 1})
	if !strings.Contains(r.Recommendation, "no clear winner") {
		t.Errorf("%s: want no clear winner", r.Recommendation)
	}
	delete(runs[2], "srtf") // failed in repeat 3
	if r = Summarize([]string{"fifo", "srtf"}, runs, Noise{}, metrics.TimeUnit{Name: "s", Scale: 1}); r.Schemes[1].Repeats != 2 || r.Schemes[1].Failures != 1 {
		t.Errorf("%+v: want 2 repeats and 1 failure", r.Schemes[1])
	}
}
