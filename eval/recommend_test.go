package eval

import (
	"strings"
	"testing"

	"github.com/salusgo/salus/metrics"
)

func TestRecommendNamesTheBestScheme(t *testing.T) {
	run := func(scheme string, makespan, avg, p95, jain, worst float64) Run {
		return Run{Scheme: scheme, Result: metrics.Result{MakespanS: makespan, AvgJCTS: avg, P95JCTS: p95, JainSlowdown: jain, MaxSlowdown: worst}}
	}
	r := &Report{Runs: []Run{
		run("fifo", 6000, 1200, 3000, 0.5, 9),
		run("srtf", 5400, 600, 2400, 0.8, 4),
		run("pack", 4800, 900, 2700, 0.7, 5),
		{Scheme: "broken", Error: "no room"},
	}}
	got := r.Recommend()
	for _, want := range []string{
		"On makespan, pack is best with 80.0 min, 11.1% lower than srtf's 90.0 min",
		"On average JCT, srtf is best with 10.0 min, 33.3% lower than pack's 15.0 min",
		"On p95 JCT, srtf is best with 40.0 min, 11.1% lower than pack's 45.0 min",
		"srtf is best with 0.800, 0.100 higher than pack's 0.700",
		"its worst slowdown is 4.00x against 5.00x",
		"Recommendation: srtf, best on 3 of 4 metrics (average JCT, p95 JCT, fairness)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("recommendation lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "broken") || strings.Contains(got, "interval") {
		t.Errorf("a failed run, or intervals without a sweep, in:\n%s", got)
	}
	// With intervals: pack leads on makespan within the noise; srtf on average JCT
	// clear of it. Without times alone, fairness is not compared.
	cands := []Candidate{
		{Scheme: "srtf", Metrics: map[string]Estimate{"makespan_s": {5000, 400}, "avg_jct_s": {600, 30}, "p95_jct_s": {2000, 100}}},
		{Scheme: "pack", Metrics: map[string]Estimate{"makespan_s": {4800, 300}, "avg_jct_s": {900, 40}, "p95_jct_s": {2100, 100}}},
	}
	got = Recommend(cands)
	for _, want := range []string{
		"pack is best with 80.0 ± 5.0 min, 4.0% lower than srtf's 83.3 ± 6.7 min (the runner-up); the 95% intervals overlap",
		"srtf is best with 10.0 ± 0.5 min, 33.3% lower than pack's 15.0 ± 0.7 min (the runner-up); the 95% intervals do not overlap",
		"Fairness is not compared",
		"Recommendation: srtf, best on 2 of 3 metrics",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("recommendation lacks %q:\n%s", want, got)
		}
	}
	// Seed by seed: pack's makespan is 120 s below srtf's at every seed but one,
	// a lead the overlapping intervals hide.
	cands[0].PerSeed = map[string]map[int64]float64{"makespan_s": {1: 5000, 2: 4600, 3: 5400, 4: 5000}}
	cands[1].PerSeed = map[string]map[int64]float64{"makespan_s": {1: 4880, 2: 4480, 3: 5280, 4: 4760}}
	got = Recommend(cands)
	if want := "seed by seed (4 paired runs) pack leads by 2.5 ± 1.6 min, clear of zero"; !strings.Contains(got, want) {
		t.Errorf("recommendation lacks %q:\n%s", want, got)
	}
	// Ties are no one's lead; two schemes leading on as many metrics are both named.
	tie := []Candidate{
		{Scheme: "fifo", Metrics: map[string]Estimate{"makespan_s": {Mean: 6000}, "avg_jct_s": {Mean: 72}, "p95_jct_s": {Mean: 300}}},
		{Scheme: "srtf", Metrics: map[string]Estimate{"makespan_s": {Mean: 6000}, "avg_jct_s": {Mean: 73}, "p95_jct_s": {Mean: 200}}},
		{Scheme: "pack", Metrics: map[string]Estimate{"makespan_s": {Mean: 6000}, "avg_jct_s": {Mean: 90}, "p95_jct_s": {Mean: 250}}},
	}
	got = Recommend(tie)
	for _, want := range []string{
		"On makespan, all 3 schemes tie at 100.0 min.",
		"fifo is best with 1.20 min, 1.4% lower than srtf's 1.22 min", // more decimals to tell them apart
		"Recommendation: no single scheme: fifo (average JCT) and srtf (p95 JCT) lead on 1 metric each",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("recommendation lacks %q:\n%s", want, got)
		}
	}
	if got := Recommend(cands[:1]); got != "" {
		t.Errorf("one scheme: %q, want no recommendation", got)
	}
}

func TestJobsCSV(t *testing.T) {
	r := &Report{Runs: []Run{{Scheme: "fifo", Policy: "fifo", Mode: "exclusive", Result: metrics.Result{Completion: []metrics.JobResult{
		{ID: "a", Model: "vae", JCTS: 20, AloneS: 10, Slowdown: 2},
		{ID: "b", Model: "vae", JCTS: 5},
	}}}}}
	var b strings.Builder
	if err := r.JobsCSV(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[1], ",10.000000,2.000000,false") || !strings.HasSuffix(lines[2], ",,,false") {
		t.Errorf("jobs.csv:\n%s\nwant a's slowdown 2 and b's empty", b.String())
	}
}
