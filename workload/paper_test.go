package workload

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// The paper trace keeps the promises its doc comment makes: 100 training jobs of
// the measured profiles, a mean time alone of 3.0 min, the first arrival at 0
// and the rest inside the 49-min window, sorted, and lengths whose log-spread is
// Philly's.
func TestPaperTrace(t *testing.T) {
	measured := map[string]bool{}
	for _, p := range Default().Measured() {
		measured[p.Key()] = true
	}
	var logs []float64
	for seed := int64(1); seed <= 30; seed++ {
		tr, err := Generate(Default(), GenOptions{Kind: Paper, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Jobs) != 100 || tr.Kind != Paper {
			t.Fatalf("seed %d: %d jobs of kind %q", seed, len(tr.Jobs), tr.Kind)
		}
		var alone float64
		for i, j := range tr.Jobs {
			if !measured[j.Profile.Key()] || j.Kind != Train || j.Iterations < 1 {
				t.Fatalf("seed %d: job %s is %s with %d iterations", seed, j.ID, j.Profile.Key(), j.Iterations)
			}
			if i > 0 && j.ArrivalS < tr.Jobs[i-1].ArrivalS {
				t.Fatalf("seed %d: arrivals out of order at %s", seed, j.ID)
			}
			alone += j.Profile.StandaloneS(j.Iterations)
			logs = append(logs, math.Log(float64(j.Iterations)*j.Profile.IterS))
		}
		// Whole iterations: the mean is the target to within one iteration's share.
		if mean := alone / 100; math.Abs(mean-PaperMeanAloneS) > 1.5 {
			t.Errorf("seed %d: mean time alone %.2f s, want %v", seed, mean, PaperMeanAloneS)
		}
		if tr.Jobs[0].ArrivalS != 0 || tr.Jobs[99].ArrivalS > PaperWindowS {
			t.Errorf("seed %d: arrivals from %v to %v s, want 0 to at most %v", seed, tr.Jobs[0].ArrivalS, tr.Jobs[99].ArrivalS, PaperWindowS)
		}
		if seed == 1 && tr.Name != Paper {
			t.Errorf("seed 1 is named %q, want %q", tr.Name, Paper)
		}
	}
	// The log-spread of the training times over 3,000 jobs (one iteration at the
	// least pulls the shortest up a little).
	var mean, ss float64
	for _, l := range logs {
		mean += l
	}
	mean /= float64(len(logs))
	for _, l := range logs {
		ss += (l - mean) * (l - mean)
	}
	if sd := math.Sqrt(ss / float64(len(logs)-1)); math.Abs(sd-PaperLogSD) > 0.15 {
		t.Errorf("log-SD of the training times %.3f, want about %v", sd, PaperLogSD)
	}
	a, _ := Generate(Default(), GenOptions{Kind: Paper, Seed: 7})
	b, _ := Generate(Default(), GenOptions{Kind: Paper, Seed: 7})
	if !reflect.DeepEqual(a, b) {
		t.Error("the same seed gave two traces")
	}
	// --load 2 halves the window; --jobs 200 doubles it.
	fast, _ := Generate(Default(), GenOptions{Kind: Paper, Seed: 7, Load: 2})
	long, _ := Generate(Default(), GenOptions{Kind: Paper, Seed: 7, Jobs: 200})
	if last := fast.Jobs[99].ArrivalS; last > PaperWindowS/2 {
		t.Errorf("load 2: last arrival %v s, past %v", last, PaperWindowS/2)
	}
	if last := long.Jobs[199].ArrivalS; last > 2*PaperWindowS || last < PaperWindowS {
		t.Errorf("200 jobs: last arrival %v s, want within %v to %v", last, PaperWindowS, 2*PaperWindowS)
	}
}

func TestGenerateRefusesAnUnknownKind(t *testing.T) {
	if _, err := Generate(Default(), GenOptions{Kind: "philly"}); err == nil || !strings.Contains(err.Error(), "paper, salus100") {
		t.Errorf("unknown kind: %v", err)
	}
}
