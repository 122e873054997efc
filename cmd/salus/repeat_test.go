package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// salus replay --repeat 2 runs each scheme twice and gives each metric's mean
// within its interval, each repeat's value, and a recommendation judged repeat
// by repeat; the logs of each repeat are kept apart under --out. Structure
// only: the figures are the machine's.
func TestReplayRepeat(t *testing.T) {
	if testing.Short() {
		t.Skip("runs worker processes for a few seconds")
	}
	t.Setenv("SALUS_CMD_TEST_WORKER", "1")
	out := filepath.Join(t.TempDir(), "out")
	got, err := run(t, "replay", "--trace", writeTrace(t, 20), "--time-scale", "0.03", "--policy", "fifo,srtf", "--repeat", "2", "-o", "json", "--out", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, got)
	}
	var rep struct {
		Runs           []struct{ Scheme, Log string }
		Recommendation string
		Repeats        struct {
			N       int
			Schemes []struct {
				Scheme    string
				Repeats   int
				Metrics   map[string]struct{ Mean, Low, High float64 }
				PerRepeat map[string][]float64 `json:"per_repeat"`
			}
		}
	}
	if err := json.Unmarshal([]byte(got[strings.Index(got, "{"):]), &rep); err != nil {
		t.Fatalf("%v\n%s", err, got)
	}
	if rep.Repeats.N != 2 || len(rep.Repeats.Schemes) != 2 || len(rep.Runs) != 2 {
		t.Fatalf("%+v: want 2 repeats of 2 schemes", rep)
	}
	for _, s := range rep.Repeats.Schemes {
		m := s.Metrics["makespan_s"]
		if s.Repeats != 2 || len(s.PerRepeat["makespan_s"]) != 2 || !(m.Low <= m.Mean && m.Mean <= m.High && m.Mean > 0) {
			t.Errorf("%s: %+v: want 2 repeats and the mean within its interval", s.Scheme, s)
		}
	}
	if rep.Recommendation != "" && !strings.Contains(rep.Recommendation, "repeat by repeat") && !strings.Contains(rep.Recommendation, "tie") {
		t.Errorf("recommendation %q: want the leads judged repeat by repeat", rep.Recommendation)
	}
	for i := 1; i <= 2; i++ {
		if logs, _ := filepath.Glob(filepath.Join(out, "repeat-"+string(rune('0'+i)), "events-*.jsonl.gz")); len(logs) != 2 {
			t.Errorf("repeat %d: logs %v, want one a scheme", i, logs)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "results.json")); err != nil {
		t.Error(err)
	}
	if _, err := run(t, "eval", "--repeat", "2"); err == nil || !strings.Contains(err.Error(), "--repeat repeats live runs") {
		t.Errorf("eval --repeat on the simulator: %v, want it refused", err)
	}
}
