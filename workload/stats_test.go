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

// A gang's GPU time counts on each of its GPUs: two jobs of the same work, one
// on 4 GPUs, demand 5 times one job's GPU time.
func TestTraceStatsCountsGangs(t *testing.T) {
	p, err := Default().Lookup("resnet50", 50, Train)
	if err != nil {
		t.Fatal(err)
	}
	tr := &Trace{Name: "gangs", Jobs: []Job{
		{ID: "a", Model: p.Model, Batch: p.Batch, Iterations: 100, ArrivalS: 0, Profile: &p},
		{ID: "b", Model: p.Model, Batch: p.Batch, Iterations: 100, ArrivalS: 50, GPUs: 4, Profile: &p},
	}}
	s := TraceStats(tr)
	one := 100 * p.IterS
	if math.Abs(s.GPUS-5*one) > 1e-9 || math.Abs(s.OfferedLoad-5*one/50) > 1e-9 {
		t.Errorf("GPU time %v, load %v: want %v, %v (the gang counts 4 times)", s.GPUS, s.OfferedLoad, 5*one, 5*one/50)
	}
	if math.Abs(s.StandaloneS-5*p.StandaloneS(100)) > 1e-9 || s.GangJobs != 1 || s.MaxGPUs != 4 {
		t.Errorf("standalone %v, gangs %d, widest %d", s.StandaloneS, s.GangJobs, s.MaxGPUs)
	}
	var b strings.Builder
	if err := s.Write(&b); err != nil || !strings.Contains(b.String(), "1 jobs on more than one GPU, up to 4") {
		t.Errorf("write: %v\n%s", err, b.String())
	}
}
