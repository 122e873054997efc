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
// class: core.Scheduler.OnlyWaits) does not end a stretch, nor does the end
// of start-up of a job that still waits (core.Scheduler.RequestWaits): the
// stretch runs past them and takes them as it commits, each at its time.
// Every job's result is the per-iteration engine's, both are passed, and the
// log stays in time order, the arrival among the records of the turns
// around it.
func TestArrivalsThatOnlyWaitDoNotEndAStretch(t *testing.T) {
	passed, timers := 0, 0
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
				timers += ag.ff.passedTimers
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
	if passed == 0 || timers == 0 {
		t.Errorf("stretches ran past %d arrivals and %d ends of start-up: none of one kind", passed, timers)
	}
}
