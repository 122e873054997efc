package sim

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/workload"
)

// shareTrace parses jobs given as "id,iterations,startup_s,share" rows, each of
// 0.1 s iterations of demand 1, arriving at 0.
func shareTrace(t *testing.T, rows ...string) *workload.Trace {
	t.Helper()
	csv := "job_id,model,batch_size,iterations,arrival_s,iter_s,persistent_mib,ephemeral_mib,demand,startup_s,share\n"
	for _, r := range rows {
		f := strings.Split(r, ",")
		csv += f[0] + ",m,1," + f[1] + ",0,0.1,1000,1000,1," + f[2] + "," + f[3] + "\n"
	}
	tr, err := workload.ParseTrace([]byte(csv), "shares.csv", "shares", workload.Default())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// Under wfair and floor, jobs of shares 1 and 3 that are both busy receive GPU
// time 1:3 within one iteration: after every iteration's end, before either
// finishes, a's GPU time and b's divided by 3 differ by at most one of a's
// iterations (0.1 s), with and without fast-forward.
func TestSharesGetGPUTimeInProportion(t *testing.T) {
	tr := shareTrace(t, "a,100,0,1", "b,300,0,3")
	for _, policy := range []string{"wfair", "floor"} {
		for _, noFF := range []bool{false, true} {
			evs := rulesRun(t, tr, policy, core.DefaultModeParams(), 1, noFF)
			got := map[string]float64{}
			checked := 0
			for _, e := range evs {
				if e.Kind == eventlog.Finish {
					break
				}
				if e.Kind == eventlog.Stretch { // iterations back to back, ended together
					got[e.Job] += e.GPU
				}
				if e.Kind != eventlog.IterEnd {
					continue
				}
				got[e.Job] += 0.1
				if d := got["a"] - got["b"]/3; math.Abs(d) > 0.1+1e-9 {
					t.Fatalf("%s (no fast-forward %v) at %.3f s: a has %.2f s, b %.2f s: not 1:3 within one iteration", policy, noFF, e.T, got["a"], got["b"])
				}
				checked++
			}
			// a ends first, its 10 s done beside b's 30 s (less one of a's iterations
			// per share): a quarter of the GPU until then.
			if checked < 100 || math.Abs(got["a"]-10) > 1e-9 || got["b"] < 29.7-1e-9 || got["b"] > 30+1e-9 {
				t.Errorf("%s: %d iterations before the first finish, a %.2f s, b %.2f s; want a done (10 s) beside b's 29.7 to 30 s", policy, checked, got["a"], got["b"])
			}
		}
	}
}

// Under floor, what an idle job leaves is lent out and not paid back: b (share
// 3) starts up for 2 s, off the GPU, while a (share 1) runs alone; once b asks,
// a keeps its floor (at most three of b's iterations between two of a's). Under
// wfair b instead runs alone until its GPU time per share has caught up (3 x 2 s
// = 6 s: 60 iterations, a starved of its share meanwhile).
func TestFloorLendsAnIdleShare(t *testing.T) {
	tr := shareTrace(t, "a,200,0,1", "b,300,2,3")
	for _, c := range []struct {
		policy     string
		lo, hi     int // b's longest run of iterations without one of a's
		aBeforeB   int // a's iterations before b's first
		startsOfB0 float64
	}{
		{"floor", 3, 3, 20, 2},
		{"wfair", 60, 60, 20, 2},
	} {
		evs := rulesRun(t, tr, c.policy, core.DefaultModeParams(), 1, true)
		aBefore, run, longest, bStarted := 0, 0, 0, false
		for _, e := range evs {
			if e.Kind == eventlog.Finish {
				break
			}
			if e.Kind != eventlog.IterStart {
				continue
			}
			switch {
			case e.Job == "b":
				if !bStarted && math.Abs(e.T-c.startsOfB0) > 1e-9 {
					t.Errorf("%s: b's first iteration at %.3f s, want %g s (the end of its start-up)", c.policy, e.T, c.startsOfB0)
				}
				bStarted = true
				run++
				longest = max(longest, run)
			case !bStarted:
				aBefore++
			default:
				run = 0
			}
		}
		if aBefore != c.aBeforeB || longest < c.lo || longest > c.hi {
			t.Errorf("%s: a ran %d iterations during b's start-up (want %d: all the GPU), and b ran up to %d in a row (want %d to %d)", c.policy, aBefore, c.aBeforeB, longest, c.lo, c.hi)
		}
	}
}

// With every share 1 (a trace without the column), wfair is fair: the same
// decisions, so the same event log but for the run header's policy name.
func TestWFairWithEqualSharesIsFair(t *testing.T) {
	tr, _ := salus100()
	fair := rulesRun(t, tr, "fair", core.DefaultModeParams(), 1, false)
	wfair := rulesRun(t, tr, "wfair", core.DefaultModeParams(), 1, false)
	if len(fair) != len(wfair) {
		t.Fatalf("fair logged %d events, wfair %d", len(fair), len(wfair))
	}
	for i := range fair {
		a, b := fair[i], wfair[i]
		a.Policy, b.Policy = "", ""
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("event %d: fair %+v, wfair %+v", i, a, b)
		}
	}
}
