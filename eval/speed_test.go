package eval

import (
	"math"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/workload"
)

func preset(t *testing.T, name string) device.Device {
	t.Helper()
	d, err := device.Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestFasterDeviceShortensTheMakespan(t *testing.T) {
	tr := salus100(t, 1)
	p100, h100 := preset(t, "p100"), preset(t, "h100")
	fastP100 := p100 // the P100's memory at the H100's speed: speed alone
	fastP100.Speed = h100.Speed
	for _, s := range []Scheme{{"exclusive", "fifo"}, {"salus", "srtf"}, {"salus", "pack"}, {"salus", "fair"}} {
		slow, err := Simulate(tr, s, core.DefaultModeParams(), p100, "")
		if err != nil {
			t.Fatal(err)
		}
		fast, err := Simulate(tr, s, core.DefaultModeParams(), h100, "")
		if err != nil {
			t.Fatal(err)
		}
		sped, err := Simulate(tr, s, core.DefaultModeParams(), fastP100, "")
		if err != nil {
			t.Fatal(err)
		}
		if !(fast.MakespanS < slow.MakespanS) || !(sped.MakespanS < slow.MakespanS) {
			t.Errorf("%s: makespan p100 %.0f s, h100 %.0f s, p100 at h100 speed %.0f s: want both below p100", s, slow.MakespanS, fast.MakespanS, sped.MakespanS)
		}
		if !(fast.AvgJCTS < slow.AvgJCTS) {
			t.Errorf("%s: avg JCT p100 %.0f s, h100 %.0f s", s, slow.AvgJCTS, fast.AvgJCTS)
		}
	}
}

func TestTuningBaselineUsesTheDevicesTime(t *testing.T) {
	// On a faster card, one by one is still exactly what exclusive fifo takes, and
	// is start-up (unscaled) plus iterations at the card's speed.
	dev := preset(t, "h100")
	rep, err := Tuning(TuningOptions{Jobs: 5, Iterations: 20, Schemes: []Scheme{{"exclusive", "fifo"}}, Device: dev})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rep.Runs {
		w := TuningWorkloads[i]
		p, _ := workload.Default().Lookup(w.Model, w.Batch, workload.Train)
		if want := 5 * (p.StartupS + 20*p.IterS/dev.Speed); math.Abs(r.SequentialS-want) > 1e-6 {
			t.Errorf("%s: one by one %v, want %v", r.Workload, r.SequentialS, want)
		}
		if d := r.Makespan - r.SequentialS; math.Abs(d) > 1e-6 {
			t.Errorf("%s: fifo makespan %v, one by one %v", r.Workload, r.Makespan, r.SequentialS)
		}
	}
}

func TestInferenceAloneLatencyIsTheDevices(t *testing.T) {
	dev := preset(t, "a100")
	rep, err := Inference(InferenceOptions{Requests: 5, Seed: 1, Device: dev, Modes: core.DefaultModeParams(),
		Schemes: []Scheme{{"exclusive", "fifo"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range rep.Runs[0].Models {
		p, _ := workload.Default().Lookup(m.Model, 1, workload.Infer)
		if want := p.IterS / dev.Speed; math.Abs(m.AloneS-want) > 1e-12 {
			t.Errorf("%s: alone %v, want %v", m.Model, m.AloneS, want)
		}
		// Alone on its own GPU, every request takes exactly that.
		if math.Abs(m.MeanS-m.AloneS) > 1e-9 {
			t.Errorf("%s: mean latency %v alone on a GPU, want %v", m.Model, m.MeanS, m.AloneS)
		}
	}
}
