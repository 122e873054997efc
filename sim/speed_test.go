package sim

import (
	"math"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/workload"
)

// aloneRun simulates one job alone on dev and returns its finish time, the GPU
// time reported in its iter_end events and the declared time given at arrival.
func aloneRun(t *testing.T, pol core.Policy, dev device.Device, j workload.Job) (end, gpu, declared float64) {
	t.Helper()
	trace := &workload.Trace{Name: "alone", Jobs: []workload.Job{j}}
	err := Run(trace, Options{Policy: pol, Device: dev, Sink: sinkFunc(func(e eventlog.Event) {
		switch e.Kind {
		case eventlog.Finish:
			end = e.T
		case eventlog.IterEnd, eventlog.Stretch:
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
	j := workload.Job{ID: "a", Model: "resnet50", Batch: 50, Iterations: 100, ArrivalS: 3, Profile: &p}
	for _, name := range core.Names() {
		pol, _ := core.Lookup(name)
		base := device.DefaultDevice()
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
