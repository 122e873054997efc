package sim

import (
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/workload"
)

// TestNoAllocationPerIteration checks that the simulator's loop allocates nothing
// per iteration when the events go nowhere, to a metrics.Collector, or to it and a
// log (an eventlog.Writer): a run with twice the iterations makes no more
// allocations than the run itself, but for the growth of a slice now and then. It
// counts the allocations made by this module outside the scheduling core, whose
// own are its package's concern.
func TestNoAllocationPerIteration(t *testing.T) {
	trace, err := workload.Generate(workload.Default(), workload.GenOptions{Seed: 1, Jobs: 10, Load: 4})
	if err != nil {
		t.Fatal(err)
	}
	// Inference jobs too, which wait on a timer between their requests.
	p, err := workload.Default().Lookup("resnet50", 1, workload.Infer)
	if err != nil {
		t.Fatal(err)
	}
	var infer []workload.Job
	for _, id := range []string{"i1", "i2", "i3"} {
		infer = append(infer, workload.Job{ID: id, Model: "resnet50", Batch: 1, Kind: workload.Infer, Iterations: 300, PauseS: 0.5, Profile: &p})
	}
	trace.Jobs = append(infer, trace.Jobs...)
	double := *trace
	double.Jobs = append([]workload.Job(nil), trace.Jobs...)
	extra := 0
	for i := range double.Jobs {
		extra += double.Jobs[i].Iterations
		double.Jobs[i].Iterations *= 2
	}
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1
	for _, name := range []string{"fifo", "fair"} {
		pol, _ := core.Lookup(name)
		for _, sink := range []string{"discard", "metrics", "metrics and a log"} {
			run := func(tr *workload.Trace) {
				var s eventlog.Sink = eventlog.Discard{}
				switch sink {
				case "metrics":
					s = metrics.NewCollector()
				case "metrics and a log":
					s = eventlog.Sinks{metrics.NewCollector(), eventlog.NewWriter(io.Discard)}
				}
				if err := Run(tr, Options{Policy: pol, Device: device.DefaultDevice(), Sink: s}); err != nil {
					t.Fatal(err)
				}
			}
			once, twice := allocsOutsideCore(func() { run(trace) }), allocsOutsideCore(func() { run(&double) })
			if twice-once > 16 { // a slice that grows, now and then
				t.Errorf("%s, events to %s: %d allocations for %d more iterations (%d, then %d)",
					name, sink, twice-once, extra, once, twice)
			}
		}
	}
}

// allocsOutsideCore counts the objects fn allocates in this module, leaving out
// those allocated in package core (and its own). runtime.MemProfileRate must be 1.
func allocsOutsideCore(fn func()) int64 {
	count := func() int64 {
		runtime.GC() // the profile is as of the last collection
		runtime.GC()
		var rs []runtime.MemProfileRecord
		n, _ := runtime.MemProfile(nil, true)
		for {
			rs = make([]runtime.MemProfileRecord, n+100)
			var ok bool
			if n, ok = runtime.MemProfile(rs, true); ok {
				rs = rs[:n]
				break
			}
		}
		var total int64
		for _, r := range rs {
			frames := runtime.CallersFrames(r.Stack())
			for {
				f, more := frames.Next()
				if strings.HasPrefix(f.Function, "github.com/salusgo/salus/") {
					if !strings.HasPrefix(f.Function, "github.com/salusgo/salus/core.") &&
						!strings.HasPrefix(f.Function, "github.com/salusgo/salus/sim.allocsOutsideCore") {
						total += r.AllocObjects
					}
					break
				}
				if !more {
					break
				}
			}
		}
		return total
	}
	before := count()
	fn()
	return count() - before
}
