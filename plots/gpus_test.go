package plots

import (
	"testing"

	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
)

// A node of 2 GPUs: job a alone on GPU 0, job b on GPU 1, then a gang g on both.
var twoGPUs = []eventlog.Event{
	{Kind: eventlog.Run, Policy: "pack", Engine: "sim", GPUs: 2},
	{T: 0, Kind: eventlog.Arrive, Job: "a", Model: "m"},
	{T: 0, Kind: eventlog.Arrive, Job: "b", Model: "m"},
	{T: 0, Kind: eventlog.Arrive, Job: "g", Model: "m", GPUs: 2},
	{T: 0, Kind: eventlog.Admit, Job: "a", Lane: 0, LaneMiB: 100},
	{T: 0, Kind: eventlog.Memory, Lane: 0, LaneMiB: 100, Jobs: 1},
	{T: 0, Kind: eventlog.Admit, Job: "b", Lane: 1, LaneMiB: 100, GPUIndex: 1},
	{T: 0, Kind: eventlog.Memory, Lane: 1, LaneMiB: 100, Jobs: 1, GPUIndex: 1},
	{T: 0, Kind: eventlog.Admit, Job: "g", Lane: 2, LaneMiB: 50, Gang: []int{0, 1}},
	{T: 0, Kind: eventlog.Memory, Lane: 2, LaneMiB: 50, Jobs: 1},
	{T: 0, Kind: eventlog.IterStart, Job: "a", Lane: 0},
	{T: 0, Kind: eventlog.IterStart, Job: "g", Lane: 2},
	{T: 2, Kind: eventlog.IterEnd, Job: "a", Lane: 0, GPU: 2},
	{T: 2, Kind: eventlog.Finish, Job: "a"},
	{T: 2, Kind: eventlog.Memory, Lane: 0},
	{T: 4, Kind: eventlog.IterEnd, Job: "g", Lane: 2, GPU: 4},
	{T: 4, Kind: eventlog.Finish, Job: "g"},
	{T: 4, Kind: eventlog.Memory, Lane: 2},
	{T: 4, Kind: eventlog.IterStart, Job: "b", Lane: 1},
	{T: 8, Kind: eventlog.IterEnd, Job: "b", Lane: 1, GPU: 4},
	{T: 8, Kind: eventlog.Finish, Job: "b"},
	{T: 8, Kind: eventlog.Memory, Lane: 1},
}

func TestPerGPUPicturesAndMetrics(t *testing.T) {
	r, c := NewRecorder(), metrics.NewCollector()
	for _, e := range twoGPUs {
		r.Emit(e)
		c.Emit(e)
	}
	l, err := r.Log()
	if err != nil {
		t.Fatal(err)
	}
	if l.GPUs != 2 {
		t.Fatalf("GPUs %d, want 2", l.GPUs)
	}
	names := func(rl *RunLog) (out []string) {
		for _, j := range rl.Jobs {
			out = append(out, j.ID)
		}
		return out
	}
	if got := names(l.OnGPU(0)); len(got) != 2 || got[0] != "a" || got[1] != "g" {
		t.Errorf("GPU 0 jobs %v, want [a g]", got)
	}
	if got := names(l.OnGPU(1)); len(got) != 2 || got[0] != "b" || got[1] != "g" {
		t.Errorf("GPU 1 jobs %v, want [b g]", got)
	}
	var mem1 float64
	for _, m := range l.OnGPU(1).Memory {
		if m.T == 0 {
			mem1 += m.LaneMiB
		}
	}
	if mem1 != 150 {
		t.Errorf("GPU 1 memory at 0: %v MiB, want 150 (b's lane and the gang's)", mem1)
	}
	res, err := c.Result()
	if err != nil {
		t.Fatal(err)
	}
	// GPU 0: a and g run over [0, 4]; GPU 1: g over [0, 4], b over [4, 8].
	want := []metrics.GPUResult{{GPU: 0, Jobs: 2, Busy: 0.5, PeakMemoryMiB: 150}, {GPU: 1, Jobs: 2, Busy: 1, PeakMemoryMiB: 150}}
	for g, w := range want {
		if res.PerGPU[g] != w {
			t.Errorf("GPU %d: %+v, want %+v", g, res.PerGPU[g], w)
		}
	}
	if res.GPUBusy != 0.75 || res.PeakMemoryMiB != 300 {
		t.Errorf("node: busy %v (want 0.75), peak %v MiB (want 300)", res.GPUBusy, res.PeakMemoryMiB)
	}
}
