package sim

import (
	"math"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/workload"
)

func TestPresetSpeedsArePositiveAndOrdered(t *testing.T) {
	speed := map[string]float64{}
	for name := range Presets {
		d, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if !(d.Speed > 0) {
			t.Errorf("%s: speed %v, want > 0", name, d.Speed)
		}
		speed[name] = d.Speed
	}
	if speed["p100"] != 1 {
		t.Errorf("p100 speed %v: the profiles' own card must be 1", speed["p100"])
	}
	// The documented order: p100 < v100 < a100 <= h100 <= h200, and the 40 GB A100
	// no faster than the 80 GB one.
	if !(speed["p100"] < speed["v100"] && speed["v100"] < speed["a100"] && speed["a100"] <= speed["h100"] &&
		speed["h100"] <= speed["h200"] && speed["v100"] < speed["a100-40g"] && speed["a100-40g"] <= speed["a100"]) {
		t.Errorf("speeds %v out of the documented order", speed)
	}
}

func TestIterSDividesBySpeed(t *testing.T) {
	for _, c := range []struct{ speed, in, want float64 }{{1, 0.3, 0.3}, {2, 0.3, 0.15}, {0, 0.3, 0.3}, {-1, 0.3, 0.3}, {4, 1, 0.25}} {
		if got := (Device{Speed: c.speed}).IterS(c.in); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("speed %v: IterS(%v) = %v, want %v", c.speed, c.in, got, c.want)
		}
	}
	p, _ := workload.Default().Lookup("resnet50", 50, workload.Train)
	d := Device{Speed: 2}
	if got, want := d.StandaloneS(p, 10), p.StartupS+10*p.IterS/2; math.Abs(got-want) > 1e-12 {
		t.Errorf("standalone %v, want start-up unscaled + iterations halved = %v", got, want)
	}
	if got := d.DeclaredS(workload.Job{Iterations: 10, Profile: p, DeclaredS: 7}); got != 7 {
		t.Errorf("an explicit declared time %v changed to %v", 7, got)
	}
}

// aloneRun simulates one job alone on dev and returns its finish time, the GPU
// time reported in its iter_end events and the declared time given at arrival.
func aloneRun(t *testing.T, pol core.Policy, dev Device, j workload.Job) (end, gpu, declared float64) {
	t.Helper()
	trace := &workload.Trace{Name: "alone", Jobs: []workload.Job{j}}
	err := Run(trace, Options{Policy: pol, Device: dev, Sink: sinkFunc(func(e eventlog.Event) {
		switch e.Kind {
		case eventlog.Finish:
			end = e.T
		case eventlog.IterEnd:
			gpu += e.GPU
		case eventlog.Arrive:
			declared = e.DeclaredS
		}
	})})
	if err != nil {
		t.Fatal(err)
	}
	return end, gpu, declared
}

func TestSpeedTwoHalvesALoneJobsIterations(t *testing.T) {
	p, _ := workload.Default().Lookup("resnet50", 50, workload.Train)
	j := workload.Job{ID: "a", Model: "resnet50", Batch: 50, Iterations: 100, ArrivalS: 3, Profile: p}
	for _, name := range core.Names() {
		pol, _ := core.Lookup(name)
		base := DefaultDevice()
		fast := base
		fast.Speed = 2
		end1, gpu1, decl1 := aloneRun(t, pol, base, j)
		end2, gpu2, decl2 := aloneRun(t, pol, fast, j)
		// Arrival and start-up do not scale; the iterations take half as long.
		if want := 3 + p.StartupS + 100*p.IterS; math.Abs(end1-want) > 1e-6 {
			t.Errorf("%s: at speed 1 ends at %v, want %v", name, end1, want)
		}
		if got, want := end2-3-p.StartupS, (end1-3-p.StartupS)/2; math.Abs(got-want) > 1e-6 {
			t.Errorf("%s: at speed 2 the iterations take %v s, want half of speed 1's: %v", name, got, want)
		}
		if math.Abs(gpu2-gpu1/2) > 1e-6 {
			t.Errorf("%s: GPU time %v at speed 2, want half of %v", name, gpu2, gpu1)
		}
		// The declared GPU time excludes the start-up and scales with the iterations.
		if want := 100 * p.IterS / 2; math.Abs(decl2-want) > 1e-6 || math.Abs(decl1-100*p.IterS) > 1e-6 {
			t.Errorf("%s: declared %v at speed 1 and %v at speed 2, want %v and %v", name, decl1, decl2, 100*p.IterS, want)
		}
	}
}

func TestEmulateScalesIterationsOnly(t *testing.T) {
	p, _ := workload.Default().Lookup("vae", 64, workload.Train)
	tr := &workload.Trace{Name: "x", Jobs: []workload.Job{{ID: "a", Iterations: 10, Profile: p}, {ID: "b", Iterations: 5, DeclaredS: 9, Profile: p}}}
	got := Device{Speed: 4}.Emulate(tr)
	if tr.Jobs[0].Profile.IterS != p.IterS {
		t.Fatal("Emulate changed its input")
	}
	a, b := got.Jobs[0], got.Jobs[1]
	if a.Profile.IterS != p.IterS/4 || a.Profile.StartupS != p.StartupS || math.Abs(a.DeclaredS-10*p.IterS/4) > 1e-12 || b.DeclaredS != 9 {
		t.Errorf("emulated jobs %+v, %+v", a, b)
	}
}
