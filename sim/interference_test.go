package sim

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/interference"
	"github.com/salusgo/salus/workload"
)

// The device model running two jobs side by side gives the co-location
// model's figures for the pair: what salus interference predict writes.
func TestPairRatesAreTheModels(t *testing.T) {
	m := interference.Builtin()
	dev, _ := device.Preset("p100")
	for _, dm := range m.Devices {
		for i, mp := range dm.Measured {
			if i%7 != 0 {
				continue
			}
			compute := core.ByDemand
			if dm.Mechanism == interference.TimeSlicing {
				compute = core.TimeSliced
			}
			a, b := PairRates(dm, compute, dev, mp.A, mp.B)
			if mp.A == mp.B {
				mp.NormA = (mp.NormA + mp.NormB) / 2
				mp.NormB = mp.NormA
			}
			if math.Abs(a-mp.NormA) > 1e-8 || math.Abs(b-mp.NormB) > 1e-8 {
				t.Errorf("%s: %s beside %s: the device model runs them at %v, %v; measured %v, %v", dm.Device, mp.A, mp.B, a, b, mp.NormA, mp.NormB)
			}
		}
	}
}

// Three jobs on one GPU: each runs at the rate its terms from the other two
// give, and when one ends the others speed up to their pair's rates.
func TestThreeJobsOnTheDeviceModel(t *testing.T) {
	d := interference.Builtin().Devices[1] // p100
	if d.Device != "p100" {
		t.Fatalf("devices: %s", d.Device)
	}
	g := NewGPU(core.TimeSliced, device.DefaultDevice())
	g.SetInterference(d)
	jobs := []interference.Job{{Name: "ResNet-50", Batch: 32}, {Name: "LM", Batch: 20}, {Name: "Transformer", Batch: 64}}
	idx := []int{d.Index(jobs[0]), d.Index(jobs[1]), d.Index(jobs[2])}
	// c is short: it ends first, then a and b run as a pair.
	lefts := []time.Duration{10 * time.Second, 10 * time.Second, time.Second}
	ws := make([]*Work, 3)
	for i := range ws {
		ws[i] = &Work{Job: string(rune('a' + i)), Lane: i, Left: lefts[i], Model: jobs[i]}
		g.Start(ws[i])
	}
	slow := func(i int, others ...int) float64 {
		var o []int
		for _, j := range others {
			o = append(o, idx[j])
		}
		return d.Slowdown(idx[i], o)
	}
	// c ends at 1 s x its slowdown beside a and b.
	endC := math.Ceil(float64(time.Second) * slow(2, 0, 1))
	dt, _ := g.NextEnd()
	if float64(dt) != endC {
		t.Fatalf("c ends after %v, want %v ns (slowdown %.4f)", dt, endC, slow(2, 0, 1))
	}
	g.Advance(dt)
	if f := g.Finished(); len(f) != 1 || f[0] != ws[2] {
		t.Fatalf("finished %v", f)
	}
	// a and b did endC / their slowdowns beside the other two; the rest at the pair's.
	g.NextEnd()
	for i := range 2 {
		done := endC / slow(i, 1-i, 2)
		want := endC + math.Ceil((float64(lefts[i])-done)*slow(i, 1-i))
		if got := float64(g.endOf(ws[i])); math.Abs(got-want) > 2 {
			t.Errorf("%s ends at %v, want %v", ws[i].Job, got, want)
		}
	}
}

// Two jobs simulated side by side under the model take the times its rates
// imply: together until the one less slowed ends, then the other alone. The
// model is carried by the simulator itself, not a formula beside it.
func TestSimulatorRunsJobsAtTheModelsRates(t *testing.T) {
	csv := "job_id,model,batch_size,iterations,arrival_s,iter_s,persistent_mib,ephemeral_mib,demand,startup_s\n" +
		"a,ResNet-50,32,1000,0,0.1,1000,1000,0.5,0\n" +
		"b,LM,20,1000,0,0.1,1000,1000,0.5,0\n"
	tr, err := workload.ParseTrace([]byte(csv), "pair.csv", "pair", workload.Default())
	if err != nil {
		t.Fatal(err)
	}
	m := interference.Builtin()
	dev, _ := device.Preset("p100")
	dev.IterOverheadS, dev.SwitchS = 0, 0
	for _, mode := range []string{core.ModeTimeslice, core.ModeMPS, core.ModeSalus} {
		policy := "fifo"
		if mode == core.ModeSalus {
			policy = "pack"
		}
		p, err := core.Compose(mode, policy, core.DefaultModeParams())
		if err != nil {
			t.Fatal(err)
		}
		ends := map[string]float64{}
		sink := sinkFunc(func(e eventlog.Event) {
			if e.Kind == eventlog.Finish {
				ends[e.Job] = e.T
			}
		})
		if err := Run(tr, Options{Policy: p, Device: dev, Sink: sink, Interference: m}); err != nil {
			t.Fatal(err)
		}
		dm, _ := m.ForDevice("p100", Mechanism(p))
		na, nb := dm.PredictPair(interference.Job{Name: "ResNet-50", Batch: 32}, interference.Job{Name: "LM", Batch: 20})
		// Each job has 100 s of work alone.
		fast, slow, nf, ns := "a", "b", na, nb
		if nb > na {
			fast, slow, nf, ns = "b", "a", nb, na
		}
		t1 := 100 / nf
		t2 := t1 + (100 - t1*ns)
		if math.Abs(ends[fast]-t1) > 0.01 || math.Abs(ends[slow]-t2) > 0.01 {
			t.Errorf("%s: %s ends at %.3f s, %s at %.3f s; the model's rates %.3f and %.3f give %.3f and %.3f s",
				mode, fast, ends[fast], slow, ends[slow], nf, ns, t1, t2)
		}
	}
}

func TestAModelWithoutTheDeviceIsRefused(t *testing.T) {
	m := &interference.Model{Name: "k80-only", Devices: []*interference.DeviceModel{{Device: "k80"}}}
	p, _ := core.Compose("", "fifo", core.DefaultModeParams())
	err := Run(shareTrace(t, "a,10,0,1"), Options{Policy: p, Device: device.DefaultDevice(), Interference: m})
	if err == nil || !strings.Contains(err.Error(), "has no pairs for P100 or v100") {
		t.Errorf("%v", err)
	}
}
