package sim

import (
	"fmt"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/sim/simtest"
	"github.com/salusgo/salus/workload"
)

// A job's end depends only on the events that change its share of the GPU: one
// that arrives and spends 100 s in start-up, off the GPU, moves no other job's
// end by a nanosecond, in any scheme, iteration by iteration or in stretches.
// (Progress used to be rounded at every step of the device model, and an
// unrelated event made a step.)
func TestUnrelatedEventsMoveNoEnd(t *testing.T) {
	a := traceJob("a", 0, 37, 0.0173, 0.0011, 100, 100)
	a.Profile.Demand = 0.7
	b := traceJob("b", 0.0031, 53, 0.0117, 0.0007, 100, 100)
	b.Profile.Demand = 0.65
	// Jobs that arrive while a and b run and spend 100 s in start-up.
	var others []workload.Job
	for i := range 8 {
		others = append(others, traceJob(fmt.Sprintf("c%d", i), 0.2001+0.0317*float64(i), 1, 0.01, 100, 10, 10))
	}
	for _, ms := range simtest.Schemes() {
		p, err := core.Compose(ms[0], ms[1], core.DefaultModeParams())
		if err != nil {
			t.Fatal(err)
		}
		for _, perIteration := range []bool{true, false} {
			endsOf := func(jobs ...workload.Job) map[string]float64 {
				ends := map[string]float64{}
				err := Run(&workload.Trace{Name: "unrelated", Jobs: jobs}, Options{Policy: p, Device: device.DefaultDevice(), PerIteration: perIteration,
					Sink: sinkFunc(func(e eventlog.Event) {
						if e.Kind == eventlog.Finish {
							ends[e.Job] = e.T
						}
					})})
				if err != nil {
					t.Fatal(err)
				}
				return ends
			}
			without, with := endsOf(a, b), endsOf(append([]workload.Job{a, b}, others...)...)
			for _, id := range []string{"a", "b"} {
				if without[id] <= others[0].ArrivalS {
					t.Fatalf("%s/%s: %s ends at %v, before the others arrive", ms[0], ms[1], id, without[id])
				}
				if with[id] != without[id] {
					t.Errorf("%s/%s (per iteration %v): %s ends at %.9f s beside a job in start-up, at %.9f s without it", ms[0], ms[1], perIteration, id, with[id], without[id])
				}
			}
		}
	}
}
