package sim

import (
	"math"
	"strings"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/workload"
)

// rulesTrace parses a small trace whose profiles are inline.
func rulesTrace(t *testing.T, rows ...string) *workload.Trace {
	t.Helper()
	csv := "job_id,model,batch_size,iterations,arrival_s,gpus,kind,pause_s,declared_s,priority,iter_s,startup_s,persistent_mib,ephemeral_mib,demand\n" +
		strings.Join(rows, "\n") + "\n"
	tr, err := workload.ParseTrace([]byte(csv), "rules.csv", "rules", workload.Default())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// rulesRun runs tr under policy (composed with mp) on gpus P100s, with or
// without fast-forward, and returns its events.
func rulesRun(t *testing.T, tr *workload.Trace, policy string, mp core.ModeParams, gpus int, noFF bool) []eventlog.Event {
	t.Helper()
	p, err := core.Compose("", policy, mp)
	if err != nil {
		t.Fatal(err)
	}
	dev, _ := device.Preset("p100")
	var evs []eventlog.Event
	if err := run(tr, Options{Policy: p, Device: dev, GPUs: gpus, Sink: sinkFunc(func(e eventlog.Event) { evs = append(evs, e) })}, noFF, nil); err != nil {
		t.Fatal(err)
	}
	return evs
}

// iterTimes is each iteration's start-to-end time of job id, seconds.
func iterTimes(evs []eventlog.Event, id string) []float64 {
	var out []float64
	var start float64
	for _, e := range evs {
		if e.Job != id {
			continue
		}
		switch e.Kind {
		case eventlog.IterStart:
			start = e.T
		case eventlog.IterEnd:
			out = append(out, e.T-start)
		}
	}
	return out
}

// A gang's ranks meet at the end of every iteration: a rank that is done holds its GPU (by its demand) until the slowest is, keeping its
// GPU busy the whole iteration. g (2 GPUs, demand 0.7) has x (demand 1) beside
// its rank on GPU 0 and b (demand 0.6) beside its rank on GPU 1: g's iterations
// take 0.1 x 1.7 = 0.170 s, and b's take 0.1 x 1.3 = 0.130 s every one, not
// less once g's rank on GPU 1 has done its share of the work.
func TestGangRanksRunInLockstep(t *testing.T) {
	tr := rulesTrace(t,
		"g,m,1,20,0,2,,,,,0.1,0,1000,1000,0.7",
		"x,m,1,100,0,1,,,,,0.1,0,1000,1000,1",
		"b,m,1,10,0,1,,,,,0.1,0,1000,1000,0.6",
	)
	evs := rulesRun(t, tr, "pack", core.DefaultModeParams(), 2, true) // per iteration: iterTimes reads each
	for _, e := range evs {
		if e.Kind == eventlog.Admit && e.Job == "b" && e.GPUIndex != 1 {
			t.Fatalf("b is on GPU %d, want 1 (beside g's second rank)", e.GPUIndex)
		}
	}
	for i, d := range iterTimes(evs, "g") {
		if math.Abs(d-0.170) > 1e-6 {
			t.Fatalf("g's iteration %d took %.6f s, want 0.170 (its slowest rank's pace)", i, d)
		}
	}
	for i, d := range iterTimes(evs, "b") {
		if math.Abs(d-0.130) > 1e-6 {
			t.Fatalf("b's iteration %d took %.6f s, want 0.130 (g's rank beside it runs the whole iteration)", i, d)
		}
	}
}

// Fast-forward never runs one rank of a gang alone. g's rank on GPU 0 lags
// behind x's iteration; once x pauses, that rank alone is in flight, and the
// fast-forward used to go on with it alone, leaving GPU 1 idle: b, arriving
// beside g's other rank, then ran its first iteration as if alone (0.121 s,
// not 0.130). Every job's result is the same with and without fast-forward,
// and b's iterations, one by one, take 0.130 s.
func TestFastForwardKeepsGangRanksTogether(t *testing.T) {
	tr := rulesTrace(t,
		"g,m,1,40,0,2,,,,,0.1,0,1000,1000,0.7",
		"x,m,1,3,0.05,1,infer,5,,,0.1,0,1000,1000,0.6",
		"b,m,1,5,2,1,,,,,0.1,0,1000,1000,0.6",
	)
	p, err := core.Compose("", "pack", core.DefaultModeParams())
	if err != nil {
		t.Fatal(err)
	}
	dev, _ := device.Preset("p100")
	logs := map[bool]*[]eventlog.Event{}
	ag := bothEngines(t, agreeCase{name: "pack", trace: tr, opts: Options{Policy: p, Device: dev, GPUs: 2},
		sinks: func(perIteration bool) eventlog.Sink {
			var evs []eventlog.Event
			logs[perIteration] = &evs
			return sinkFunc(func(e eventlog.Event) { evs = append(evs, e) })
		}})
	if ag.diff != nil {
		t.Fatalf("with fast-forward: %v", ag.diff)
	}
	slow := *logs[true]
	if n := len(iterTimes(slow, "b")); n != 5 {
		t.Fatalf("b ran %d iterations one by one, want 5", n)
	}
	for i, d := range iterTimes(slow, "b") {
		if math.Abs(d-0.130) > 1e-6 {
			t.Errorf("b's iteration %d took %.6f s, want 0.130 (beside g's rank)", i, d)
		}
	}
}

// policyAdmission is the mode parameters of --admission policy --starve-factor k.
func policyAdmission(k float64) core.ModeParams {
	mp := core.DefaultModeParams()
	mp.Admission, mp.StarveFactor = core.AdmitByPolicy, k
	return mp
}

// admittedAt is when each job was admitted, seconds.
func admittedAt(evs []eventlog.Event) map[string]float64 {
	out := map[string]float64{}
	for _, e := range evs {
		if e.Kind == eventlog.Admit {
			out[e.Job] = e.T
		}
	}
	return out
}

// Admission is decided at the instant a waiting job starts starving, not only
// at arrivals and leaves. Under srtf with --admission policy --starve-factor 1:
// d (2 s) runs, then a (22 s); b (declares 5 s, arrives at 0.1) does not fit
// beside both; c (declares 1 s, arrives at 0.5, starving from 1.5) never fits
// beside a. When d leaves at 2, b fits, but c, starving, blocks it; at 5.1 b
// starves too and, the earlier arrival, comes first: it is admitted at 5.1, not
// when a leaves at 24.
func TestAdmissionAtTheStarvationInstant(t *testing.T) {
	tr := rulesTrace(t,
		"a,m,1,220,0,1,,,,,0.1,0,7000,500,1",
		"d,m,1,20,0,1,,,,,0.1,0,4000,500,1",
		"b,m,1,10,0.1,1,,,5,,0.1,0,4000,500,1",
		"c,m,1,10,0.5,1,,,1,,0.1,0,9000,500,1",
	)
	for _, noFF := range []bool{false, true} {
		at := admittedAt(rulesRun(t, tr, "srtf", policyAdmission(1), 1, noFF))
		if math.Abs(at["b"]-5.1) > 1e-9 {
			t.Errorf("fast-forward %v: b admitted at %v s, want 5.1 (when it starts starving; admitted: %v)", !noFF, at["b"], at)
		}
	}
}

// firstStartAt is the job whose iteration starts first at t (seconds).
func firstStartAt(evs []eventlog.Event, t float64) string {
	for _, e := range evs {
		if e.Kind == eventlog.IterStart && math.Abs(e.T-t) < 1e-9 {
			return e.Job
		}
	}
	return ""
}

// Where a pause's end falls among the requests of one instant: it is a timer, as
// a start-up's end is, so its request comes after those of the iterations that
// ended at that instant, and among the pauses and start-ups that end there, the
// one that began first asks first (timers of one instant fire in the order they
// were set; start-ups off the GPU begin at arrival, so among them that is arrival
// order). inf (inference, arrives at 0) ends its first request at 1 and pauses
// 4 s; s's start-up ends at 5 too. Under pack, which serves a lane's requests in
// the order they reach it, s runs first at 5 when its start-up began before
// inf's pause (s arrives at 0.5, start-up 4.5 s), inf when it began after (s
// arrives at 2, start-up 3 s). The two share one lane (7465.5 MiB of the P100's
// 14336: the second job's own lane would not fit).
func TestPauseEndsAmongRequestsInTheOrderSet(t *testing.T) {
	for _, c := range []struct{ s, first string }{
		{"s,m,1,1,0.5,1,,,,,1,4.5,100,7000,1", "s"},
		{"s,m,1,1,2,1,,,,,1,3,100,7000,1", "inf"},
	} {
		tr := rulesTrace(t, "inf,m,1,2,0,1,infer,4,,,1,0,100,7000,1", c.s)
		evs := rulesRun(t, tr, "pack", core.DefaultModeParams(), 1, false)
		lanes := map[int]bool{}
		for _, e := range evs {
			if e.Kind == eventlog.Admit {
				lanes[e.Lane] = true
			}
		}
		if len(lanes) != 1 {
			t.Fatalf("%s: the jobs are in %d lanes, want 1", c.s, len(lanes))
		}
		if got := firstStartAt(evs, 5); got != c.first {
			t.Errorf("%s: %q runs first at 5 s, want %s (whose wait began first)", c.s, got, c.first)
		}
	}
}

// Attained time is standalone work: what an iteration's work would take alone on
// the device, however long lanes side by side made it take. a and b (demand 1
// each) run in lanes of their own under pack: each iteration takes 0.2 s, and
// each counts 0.1 s of attained GPU time (the iter_end event's gpu_s, what the
// core is told).
func TestAttainedIsStandaloneWork(t *testing.T) {
	tr := rulesTrace(t,
		"a,m,1,5,0,1,,,,,0.1,0,1000,1000,1",
		"b,m,1,5,0,1,,,,,0.1,0,1000,1000,1",
	)
	evs := rulesRun(t, tr, "pack", core.DefaultModeParams(), 1, true) // per iteration: iterTimes reads each
	for _, id := range []string{"a", "b"} {
		for i, d := range iterTimes(evs, id) {
			if math.Abs(d-0.2) > 1e-9 {
				t.Fatalf("%s's iteration %d took %v s, want 0.2 (two lanes of demand 1)", id, i, d)
			}
		}
	}
	for _, e := range evs {
		if e.Kind == eventlog.IterEnd && math.Abs(e.GPU-0.1) > 1e-9 {
			t.Fatalf("%s at %v: attained %v s for an iteration, want 0.1 (its standalone work)", e.Job, e.T, e.GPU)
		}
	}
}

// A trace row with no declared_s declares its iterations' standalone time on
// the device (iterations x iteration time), not "no time": for the starvation
// bound it is passed over like any job during K x that time. Under srtf with
// --admission policy --starve-factor 1, w (10 iterations of 0.1 s: 1 s) arrives
// at 0.1 and starves only at 1.1; s (declares 0.3 s) arrives later and is
// admitted ahead of it when a leaves at 0.5. A job that declared no time would
// starve from its arrival and never be passed over.
func TestNoDeclaredSDeclaresItsIterations(t *testing.T) {
	tr := rulesTrace(t,
		"a,m,1,5,0,1,,,,,0.1,0,8000,500,1",
		"w,m,1,10,0.1,1,,,,,0.1,0,8000,500,1",
		"s,m,1,3,0.2,1,,,0.3,,0.1,0,8000,500,1",
	)
	evs := rulesRun(t, tr, "srtf", policyAdmission(1), 1, false)
	for _, e := range evs {
		if e.Kind == eventlog.Arrive && e.Job == "w" && math.Abs(e.DeclaredS-1) > 1e-9 {
			t.Errorf("w declares %v s, want 1 (10 iterations of 0.1 s)", e.DeclaredS)
		}
	}
	at := admittedAt(evs)
	if !(math.Abs(at["s"]-0.5) < 1e-9 && at["w"] > at["s"]) {
		t.Errorf("admitted at %v: want s at 0.5, before w (not yet starving)", at)
	}
}
