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
		{Scheme: "srtf", Metrics: map[string]Estimate{"makespan_s": {Mean: 5000, CI95: 400}, "avg_jct_s": {Mean: 600, CI95: 30}, "p95_jct_s": {Mean: 2000, CI95: 100}}},
		{Scheme: "pack", Metrics: map[string]Estimate{"makespan_s": {Mean: 4800, CI95: 300}, "avg_jct_s": {Mean: 900, CI95: 40}, "p95_jct_s": {Mean: 2100, CI95: 100}}},
	}
	got = Recommend(cands)
	for _, want := range []string{
		"pack is best with 80.0 ± 5.0 min, 4.0% lower than srtf's 83.3 ± 6.7 min (the runner-up); the 95% intervals overlap",
		"srtf is best with 10.0 ± 0.5 min, 33.3% lower than pack's 15.0 ± 0.7 min (the runner-up); the 95% intervals do not overlap",
		"Fairness is not compared",
		// Only srtf's lead on average JCT is clear of the noise.
		"Recommendation: srtf, best on every metric with a clear winner (average JCT); the leads on makespan, p95 JCT are within the noise and not counted.",
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
	for _, want := range []string{
		"seed by seed (4 paired runs) pack leads by 2.5 min [2.0, 4.0], clear of zero.",
		"Recommendation: no single scheme: srtf (average JCT) and pack (makespan) clearly lead on 1 metric each; the lead on p95 JCT is within the noise and not counted; choose by the metric that matters most.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("recommendation lacks %q:\n%s", want, got)
		}
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

// seeds gives a metric's value at seeds 1, 2, ... .
func seeds(vs ...float64) map[int64]float64 {
	m := map[int64]float64{}
	for i, v := range vs {
		m[int64(i+1)] = v
	}
	return m
}

// TestRecommendCountsOnlyClearLeads pins the rule: a lead within the noise (the
// paired difference's interval reaches zero, or the 95% intervals overlap) is no
// win, and with no clear win anywhere there is no clear winner; a single run's
// lead, with nothing said of the noise, still counts.
func TestRecommendCountsOnlyClearLeads(t *testing.T) {
	check := func(t *testing.T, got string, want, unwanted []string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("recommendation lacks %q:\n%s", w, got)
			}
		}
		for _, u := range unwanted {
			if strings.Contains(got, u) {
				t.Errorf("recommendation has %q:\n%s", u, got)
			}
		}
	}
	// Seed by seed fifo's makespan is 60 s below, 30 s above, 90 s below and 60 s
	// above srtf's: it leads by 15 s on average, but the paired interval (a BCa
	// bootstrap of the four differences) reaches from -60 to 90 s; the same on
	// every metric.
	noisy := func() []Candidate {
		return []Candidate{
			{Scheme: "fifo",
				Metrics: map[string]Estimate{"makespan_s": {Mean: 5985, CI95: 120}, "avg_jct_s": {Mean: 592.5, CI95: 12}, "p95_jct_s": {Mean: 1192.5, CI95: 24}, "jain_slowdown": {Mean: 0.605, CI95: 0.06}},
				PerSeed: map[string]map[int64]float64{
					"makespan_s": seeds(5940, 6030, 5910, 6060), "avg_jct_s": seeds(594, 603, 591, 582),
					"p95_jct_s": seeds(1188, 1206, 1182, 1194), "jain_slowdown": seeds(0.63, 0.58, 0.64, 0.57)}},
			{Scheme: "srtf",
				Metrics: map[string]Estimate{"makespan_s": {Mean: 6000, CI95: 100}, "avg_jct_s": {Mean: 600, CI95: 10}, "p95_jct_s": {Mean: 1200, CI95: 20}, "jain_slowdown": {Mean: 0.6, CI95: 0.05}},
				PerSeed: map[string]map[int64]float64{
					"makespan_s": seeds(6000, 6000, 6000, 6000), "avg_jct_s": seeds(600, 600, 600, 600),
					"p95_jct_s": seeds(1200, 1200, 1200, 1200), "jain_slowdown": seeds(0.6, 0.6, 0.6, 0.6)}},
		}
	}

	t.Run("paired, every lead within the noise", func(t *testing.T) {
		check(t, Recommend(noisy()), []string{
			"On makespan, fifo is best with 99.8 ± 2.0 min, 0.2% lower than srtf's 100.0 ± 1.7 min (the runner-up); " +
				"seed by seed (4 paired runs) fifo leads by 0.2 min [-1.0, 1.5], so the lead is within the noise: no clear winner on makespan.",
			"so the lead is within the noise: no clear winner on average JCT.",
			"so the lead is within the noise: no clear winner on p95 JCT.",
			"fifo is best with 0.605 ± 0.060, 0.005 higher than srtf's 0.600 ± 0.050 (the runner-up); " +
				"seed by seed (4 paired runs) fifo leads by 0.005 [-0.030, 0.040], so the lead is within the noise: no clear winner on fairness.",
			"Recommendation: no clear winner: every lead is within the noise across seeds; run more seeds (salus sweep --seeds)",
		}, []string{"Recommendation: fifo", "Recommendation: srtf", "clear of zero"})
	})

	t.Run("paired, one clear lead and one within the noise", func(t *testing.T) {
		cands := noisy()
		// srtf's average and p95 JCT are clearly lower at every seed, and fifo's
		// fairness clearly higher; fifo's makespan lead stays within the noise.
		cands[0].Metrics["avg_jct_s"], cands[0].PerSeed["avg_jct_s"] = Estimate{Mean: 905, CI95: 20}, seeds(900, 890, 920, 910)
		cands[0].Metrics["p95_jct_s"], cands[0].PerSeed["p95_jct_s"] = Estimate{Mean: 1805, CI95: 40}, seeds(1800, 1780, 1840, 1800)
		cands[0].Metrics["jain_slowdown"], cands[0].PerSeed["jain_slowdown"] = Estimate{Mean: 0.805, CI95: 0.02}, seeds(0.80, 0.81, 0.79, 0.82)
		check(t, Recommend(cands), []string{
			"no clear winner on makespan.",
			"On average JCT, srtf is best with 10.0 ± 0.2 min, 33.7% lower than fifo's 15.1 ± 0.3 min (the runner-up); " +
				"seed by seed (4 paired runs) srtf leads by 5.1 min [4.8, 5.3], clear of zero.",
			"fifo is best with 0.805 ± 0.020, 0.205 higher than srtf's 0.600 ± 0.050 (the runner-up); " +
				"seed by seed (4 paired runs) fifo leads by 0.205 [0.190, 0.220], clear of zero.",
			// Counting the makespan lead too would make it 2 against 2, no single scheme.
			"Recommendation: srtf, best on 2 of the 3 metrics with a clear winner (average JCT, p95 JCT); " +
				"the lead on makespan is within the noise and not counted; weigh the others above if they matter more.",
		}, []string{"no single scheme", "no clear winner:"})

		// With fifo's fairness as noisy as its makespan, srtf leads on every metric
		// with a clear winner.
		cands[0].Metrics["jain_slowdown"], cands[0].PerSeed["jain_slowdown"] = Estimate{Mean: 0.605, CI95: 0.06}, seeds(0.63, 0.58, 0.64, 0.57)
		check(t, Recommend(cands), []string{
			"Recommendation: srtf, best on every metric with a clear winner (average JCT, p95 JCT); " +
				"the leads on makespan, fairness are within the noise and not counted.",
		}, nil)
	})

	t.Run("paired runs that contradict the means", func(t *testing.T) {
		// fifo's mean (over more seeds than srtf ran) is lower, but at the seeds
		// both ran srtf's makespan is 100 s lower: that is no clear win either.
		cands := []Candidate{
			{Scheme: "fifo", Metrics: map[string]Estimate{"makespan_s": {Mean: 5900, CI95: 300}}, PerSeed: map[string]map[int64]float64{"makespan_s": seeds(6100, 6110, 6090, 5300)}},
			{Scheme: "srtf", Metrics: map[string]Estimate{"makespan_s": {Mean: 6000, CI95: 20}}, PerSeed: map[string]map[int64]float64{"makespan_s": seeds(6000, 6010, 5990)}},
		}
		check(t, Recommend(cands), []string{
			"seed by seed (3 paired runs) fifo leads by -1.7 min [-1.7, -1.7], so on the seeds both ran the runner-up is ahead: no clear winner on makespan.",
			"Recommendation: no clear winner",
		}, []string{"Recommendation: fifo", "Recommendation: srtf"})
	})

	t.Run("unpaired, intervals overlap", func(t *testing.T) {
		// fifo's makespan lead (100 s) is inside the intervals' 200 s; srtf's
		// average JCT lead (300 s) is clear of their 70 s.
		cands := []Candidate{
			{Scheme: "fifo", Metrics: map[string]Estimate{"makespan_s": {Mean: 5900, CI95: 100}, "avg_jct_s": {Mean: 900, CI95: 40}}},
			{Scheme: "srtf", Metrics: map[string]Estimate{"makespan_s": {Mean: 6000, CI95: 100}, "avg_jct_s": {Mean: 600, CI95: 30}}},
		}
		check(t, Recommend(cands), []string{
			"On makespan, fifo is best with 98.3 ± 1.7 min, 1.7% lower than srtf's 100.0 ± 1.7 min (the runner-up); " +
				"the 95% intervals overlap, so the lead is within the noise across seeds: no clear winner on makespan.",
			"srtf is best with 10.0 ± 0.5 min, 33.3% lower than fifo's 15.0 ± 0.7 min (the runner-up); the 95% intervals do not overlap.",
			"Recommendation: srtf, best on every metric with a clear winner (average JCT); the lead on makespan is within the noise and not counted.",
		}, []string{"Recommendation: fifo", "no single scheme"})

		// One interval alone is noise information too: a 100 s lead inside srtf's
		// ± 150 s on both metrics is no clear winner.
		cands = []Candidate{
			{Scheme: "fifo", Metrics: map[string]Estimate{"makespan_s": {Mean: 5900}, "avg_jct_s": {Mean: 800}}},
			{Scheme: "srtf", Metrics: map[string]Estimate{"makespan_s": {Mean: 6000, CI95: 150}, "avg_jct_s": {Mean: 700, CI95: 150}}},
		}
		check(t, Recommend(cands), []string{
			"no clear winner on makespan.", "no clear winner on average JCT.",
			"Recommendation: no clear winner: every lead is within the noise across seeds",
		}, []string{"Recommendation: fifo", "Recommendation: srtf"})
	})

	t.Run("single runs count as before", func(t *testing.T) {
		// No interval and no per-seed values (one seed is not a paired comparison):
		// nothing says a lead is noise, however small.
		cands := []Candidate{
			{Scheme: "fifo", Metrics: map[string]Estimate{"makespan_s": {Mean: 5994}, "avg_jct_s": {Mean: 900}},
				PerSeed: map[string]map[int64]float64{"makespan_s": seeds(5994)}},
			{Scheme: "srtf", Metrics: map[string]Estimate{"makespan_s": {Mean: 6000}, "avg_jct_s": {Mean: 600}},
				PerSeed: map[string]map[int64]float64{"makespan_s": seeds(6000)}},
		}
		check(t, Recommend(cands), []string{
			"On makespan, fifo is best with 99.9 min, 0.1% lower than srtf's 100.0 min (the runner-up).",
			"On average JCT, srtf is best with 10.0 min, 33.3% lower than fifo's 15.0 min (the runner-up).",
			"Recommendation: no single scheme: fifo (makespan) and srtf (average JCT) lead on 1 metric each; choose by the metric that matters most.",
		}, []string{"noise", "no clear winner", "seed by seed"})
		cands[0].Metrics["avg_jct_s"] = Estimate{Mean: 500}
		check(t, Recommend(cands), []string{"Recommendation: fifo, best on every metric where one scheme leads."}, []string{"noise"})
	})
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
	if len(lines) != 3 || !strings.Contains(lines[1], ",10.000000,2.000000,false,") || !strings.Contains(lines[2], ",,,false,") {
		t.Errorf("jobs.csv:\n%s\nwant a's slowdown 2 and b's empty", b.String())
	}
}

// A single run's lead under half a percent is a tie, not a win: two live runs
// whose makespans differ by a tenth of a percent recommend by the metrics that do
// differ.
func TestRecommendTiesSingleRunsWithinHalfAPercent(t *testing.T) {
	run := func(scheme string, makespan, avg float64) Run {
		return Run{Scheme: scheme, Result: metrics.Result{MakespanS: makespan, AvgJCTS: avg, P95JCTS: makespan}}
	}
	r := &Report{Runs: []Run{run("srtf", 10.34, 6.2), run("pack", 10.35, 5.7)}}
	got := r.Recommend()
	for _, want := range []string{"On makespan, both schemes tie within 0.5%", "On average JCT, pack is best",
		"Recommendation: pack, best on every metric where one scheme leads"} {
		if !strings.Contains(got, want) {
			t.Errorf("recommendation lacks %q:\n%s", want, got)
		}
	}
	// 0.6% apart is a lead.
	r = &Report{Runs: []Run{run("srtf", 10.00, 6.2), run("pack", 10.06, 5.7)}}
	if got := r.Recommend(); !strings.Contains(got, "On makespan, srtf is best") {
		t.Errorf("a 0.6%% lead is not counted:\n%s", got)
	}
}
