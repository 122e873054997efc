package workload

import (
	"math"
	"strings"
	"testing"
)

func TestTraceStats(t *testing.T) {
	tr, err := Generate(Default(), GenOptions{Kind: Salus100, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := TraceStats(tr)
	var gpu float64
	for _, j := range tr.Jobs {
		gpu += float64(j.Iterations) * j.Profile.IterS
	}
	span := tr.Jobs[len(tr.Jobs)-1].ArrivalS - tr.Jobs[0].ArrivalS
	if s.Jobs != 100 || math.Abs(s.GPUS-gpu) > 1e-6 || math.Abs(s.OfferedLoad-gpu/span) > 1e-9 {
		t.Errorf("stats %+v", s)
	}
	// The generator aims at a standalone load of 1; one trace is within reason of it.
	if s.StandaloneLoad < 0.7 || s.StandaloneLoad > 1.4 {
		t.Errorf("standalone load %.2f, want about 1", s.StandaloneLoad)
	}
	n := 0
	for _, c := range s.Lengths {
		n += c.Jobs
		if c.Value == "other" {
			t.Errorf("a generated job has no measured length class")
		}
	}
	if n != 100 || s.PersistentMiB.Max < s.PersistentMiB.Min || s.LaneMiB.Min <= 0 {
		t.Errorf("lengths %v, memory %+v", s.Lengths, s.PersistentMiB)
	}
	var b strings.Builder
	if err := s.Write(&b); err != nil || !strings.Contains(b.String(), "offered load") {
		t.Errorf("write: %v\n%s", err, b.String())
	}
}
