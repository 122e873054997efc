package sweep

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/sim"
	"github.com/salusgo/salus/sim/simtest"
	"github.com/salusgo/salus/workload"
)

// admissionRun simulates srtf on tr under the order of admission given, and
// returns its average JCT and the pass-overs of its log.
func admissionRun(t *testing.T, tr *workload.Trace, admission string, k float64) (float64, *simtest.PassOvers) {
	t.Helper()
	mp := core.DefaultModeParams()
	mp.Admission, mp.StarveFactor = admission, k
	p, err := core.Compose("", "srtf", mp)
	if err != nil {
		t.Fatal(err)
	}
	c, po := metrics.NewCollector(), simtest.NewPassOvers()
	if err := sim.Run(tr, sim.Options{Policy: p, Device: device.DefaultDevice(), Sink: eventlog.Sinks{c, po}}); err != nil {
		t.Fatal(err)
	}
	r, err := c.Result()
	if err != nil {
		t.Fatal(err)
	}
	return r.AvgJCTS, po
}

// TestAdmissionFigures prints the README's table of "Admission in the policy's
// order": srtf on the generated salus100 trace at loads 1, 2, 4 and 8, seeds 1
// to 10, P100: the ratio of its average JCT with policy-ordered admission to
// that with arrival-order admission, seed by seed (the same trace for both),
// summarized as a mean and a 95% confidence interval (Summarize: Student's t
// over the seeds); and the longest wait at which a job was passed over, and the
// longest wait for admission, in multiples of the job's declared GPU time. It
// fails when a job is passed over after waiting K x its length. It takes a few
// seconds, so it runs only with SALUS_FIGURES=1 (SALUS_STARVE=K sets K):
//
//	SALUS_FIGURES=1 go test ./sweep -run TestAdmissionFigures -v
func TestAdmissionFigures(t *testing.T) {
	if os.Getenv("SALUS_FIGURES") == "" {
		t.Skip("set SALUS_FIGURES=1 to print the figures of the README")
	}
	k := core.DefaultStarveFactor
	if s := os.Getenv("SALUS_STARVE"); s != "" {
		var err error
		if k, err = strconv.ParseFloat(s, 64); err != nil {
			t.Fatalf("SALUS_STARVE=%s: %v", s, err)
		}
	}
	t.Logf("srtf, salus100, P100, K=%g, seeds 1-10", k)
	t.Logf("| load | avg JCT arrival (min) | avg JCT policy (min) | policy / arrival, mean [95%% CI] | policy better on | longest wait passed over (x length) | longest wait, policy (x length) | longest wait, arrival (x length) |")
	for _, load := range []float64{1, 2, 4, 8} {
		var ratios, byArrival, byPolicy []float64
		var passed, waitP, waitA float64
		better := 0
		for seed := int64(1); seed <= 10; seed++ {
			tr, err := workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Salus100, Seed: seed, Load: load})
			if err != nil {
				t.Fatal(err)
			}
			a, poA := admissionRun(t, tr, core.AdmitByArrival, 0)
			p, poP := admissionRun(t, tr, core.AdmitByPolicy, k)
			if poP.MaxPassedOver >= k*(1+1e-9) {
				t.Errorf("load %g seed %d: passed over after %gx its length, beyond K=%g: %s", load, seed, poP.MaxPassedOver, k, poP.Worst)
			}
			ratios, byArrival, byPolicy = append(ratios, p/a), append(byArrival, a), append(byPolicy, p)
			passed, waitP, waitA = max(passed, poP.MaxPassedOver), max(waitP, poP.MaxWait), max(waitA, poA.MaxWait)
			if p < a {
				better++
			}
		}
		r := Summarize(ratios)
		t.Logf("| %g | %.1f | %.1f | %.3f [%.3f, %.3f] | %d of 10 seeds | %.2f | %.1f | %.1f |", load, Summarize(byArrival).Mean/60, Summarize(byPolicy).Mean/60,
			r.Mean, r.Low, r.High, better, passed, waitP, waitA)
	}
	fmt.Fprintln(os.Stderr)
}

// A grid with admissions runs each cell under each order, and the order changes
// srtf's result under load; an unknown order is refused.
func TestSweepComparesAdmissions(t *testing.T) {
	g := Grid{Policies: []string{"srtf"}, Modes: []string{DefaultMode}, Seeds: []int64{1}, Loads: []float64{4},
		CapacitiesMiB: []float64{14336}, Device: "p100", Jobs: 100, Admissions: []string{core.AdmitByArrival, core.AdmitByPolicy}}
	if err := Check(g); err != nil {
		t.Fatal(err)
	}
	cells := g.Cells(Applicable)
	if len(cells) != 2 || cells[0].ModeName() != "salus/admit-arrival" || cells[1].ModeName() != "salus/admit-policy" {
		t.Fatalf("cells %v: want srtf under arrival and policy admission", cells)
	}
	run := SimRunner(g)
	a, err := run(cells[0], 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := run(cells[1], 1)
	if err != nil {
		t.Fatal(err)
	}
	if a["avg_jct_s"] == p["avg_jct_s"] {
		t.Errorf("srtf at load 4: average JCT %v under both orders of admission", a["avg_jct_s"])
	}
	g.Admissions = []string{"sideways"}
	if err := Check(g); err == nil || !strings.Contains(err.Error(), "choose arrival or policy") {
		t.Errorf("admission sideways: %v", err)
	}
}
