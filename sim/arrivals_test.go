package sim

import (
	"fmt"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/interference"
)

// An arrival that would only wait (the device's memory is full for its
// class: core.Scheduler.OnlyWaits) does not end a stretch: the stretch runs
// past it and takes it as it commits, at its time. Every job's result is the
// per-iteration engine's, arrivals are passed, and the log stays in time
// order, the arrival among the records of the turns around it.
func TestArrivalsThatOnlyWaitDoNotEndAStretch(t *testing.T) {
	passed := 0
	for _, pol := range []string{"pack", "fair", "srtf"} {
		p, err := core.Compose("salus", pol, core.DefaultModeParams())
		if err != nil {
			t.Fatal(err)
		}
		for seed := int64(1); seed <= 2; seed++ {
			tr := salusTrace(t, seed, 80)
			for _, im := range []*interference.Model{nil, interference.Builtin()} {
				opts := Options{Policy: p, Device: device.DefaultDevice(), Interference: im}
				name := fmt.Sprintf("%s seed %d (co-location model %v)", pol, seed, im != nil)
				ag := bothEngines(t, agreeCase{name: name, trace: tr, opts: opts, check: true})
				if ag.diff != nil {
					t.Fatalf("%s: %v", name, ag.diff)
				}
				passed += ag.ff.passedArrivals
				last := -1.0
				arrivals := 0
				opts.Sink = sinkFunc(func(e eventlog.Event) {
					if e.T < last {
						t.Fatalf("%s: a %s event at %v s after one at %v s", name, e.Kind, e.T, last)
					}
					last = e.T
					if e.Kind == eventlog.Arrive {
						arrivals++
					}
				})
				if err := run(tr, opts, false, nil); err != nil {
					t.Fatal(err)
				}
				if arrivals != len(tr.Jobs) {
					t.Fatalf("%s: %d arrivals logged, %d jobs", name, arrivals, len(tr.Jobs))
				}
			}
		}
	}
	if passed == 0 {
		t.Error("no stretch ran past an arrival")
	}
}
