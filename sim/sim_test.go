package sim

import (
	"bytes"
	"math"
	"runtime"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/sim/simtest"
	"github.com/salusgo/salus/workload"
)

func TestSuspendPaysForItsCopies(t *testing.T) {
	// Jobs all arrive at once, so the one lane is never idle after the first start-up
	// and the makespans differ by the copies alone.
	trace := simtest.RandomTrace(7, 12)
	for i := range trace.Jobs {
		trace.Jobs[i].ArrivalS = 0
		trace.Jobs[i].Iterations *= 20
	}
	dev := device.DefaultDevice()
	end := func(mode string) (float64, float64) {
		p, err := core.Compose(mode, "fair", core.DefaultModeParams())
		if err != nil {
			t.Fatal(err)
		}
		var last, copied float64
		err = Run(trace, Options{Policy: p, Device: dev, Sink: sinkFunc(func(e eventlog.Event) {
			last = math.Max(last, e.T)
			copied += e.CopyMiB
		})})
		if err != nil {
			t.Fatal(err)
		}
		return last, copied
	}
	salus, none := end("salus")
	suspend, copied := end("suspend")
	if none != 0 || copied == 0 {
		t.Fatalf("copied %v MiB under salus, %v under suspend", none, copied)
	}
	want := copied * (1 << 20) / (dev.PCIeGBps * 1e9)
	if got := suspend - salus; math.Abs(got-want) > 1e-6*want {
		t.Errorf("suspend's makespan exceeds salus's by %.4f s; %.0f MiB over %.0f GB/s is %.4f s", got, copied, dev.PCIeGBps, want)
	}
}

func TestTimeslicingCostsContextSwitches(t *testing.T) {
	// Two jobs resident under time-slicing each run at half speed less the switches.
	p, _ := workload.Default().Lookup("resnet50", 25, workload.Train)
	trace := &workload.Trace{Name: "two", Jobs: []workload.Job{{ID: "a", Iterations: 50, Profile: &p}, {ID: "b", Iterations: 50, Profile: &p}}}
	pol, _ := core.Compose("timeslice", "fifo", core.DefaultModeParams())
	dev := device.DefaultDevice()
	var end float64
	Run(trace, Options{Policy: pol, Device: dev, Sink: sinkFunc(func(e eventlog.Event) { end = e.T })})
	want := p.StartupS + 50*p.IterS*2/dev.TimesliceEfficiency()
	if math.Abs(end-want) > 1e-6 {
		t.Errorf("ends at %v, want %v", end, want)
	}
}

func TestConcurrentLanesShareComputeByDemand(t *testing.T) {
	// Two resnet50/25 jobs (demand 0.80 each) get their own lanes under pack and run
	// side by side: each is slowed by the sum of the demands.
	p, _ := workload.Default().Lookup("resnet50", 25, workload.Train)
	trace := &workload.Trace{Name: "two", Jobs: []workload.Job{
		{ID: "a", Iterations: 50, Profile: &p}, {ID: "b", Iterations: 50, Profile: &p}}}
	pol, _ := core.Lookup("pack")
	ends := map[string]float64{}
	err := Run(trace, Options{Policy: pol, Device: device.DefaultDevice(), Sink: sinkFunc(func(e eventlog.Event) {
		if e.Kind == eventlog.Finish {
			ends[e.Job] = e.T
		}
	})})
	if err != nil {
		t.Fatal(err)
	}
	want := p.StartupS + 50*p.IterS*math.Max(1, 2*p.Demand)
	for id, end := range ends {
		if math.Abs(end-want) > 1e-6 {
			t.Errorf("job %s ends at %v, want %v", id, end, want)
		}
	}
}

func TestSameSeedSameLog(t *testing.T) {
	logOf := func(seed int64) []byte {
		trace, err := workload.Generate(workload.Default(), workload.GenOptions{Seed: seed, Jobs: 30})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		w := eventlog.NewWriter(&buf)
		pol, _ := core.Lookup("pack")
		if err := Run(trace, Options{Policy: pol, Device: device.DefaultDevice(), Sink: w}); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		return buf.Bytes()
	}
	a, b := logOf(5), logOf(5)
	if !bytes.Equal(a, b) {
		t.Fatal("the same seed gave different event logs")
	}
	if bytes.Equal(a, logOf(6)) {
		t.Fatal("different seeds gave the same event log")
	}
}

type sinkFunc func(eventlog.Event)

func (f sinkFunc) Emit(e eventlog.Event) { f(e) }

// salus100 is the generated salus100 trace of seed 1 and its iterations.
func salus100() (*workload.Trace, int) {
	trace, _ := workload.Generate(workload.Default(), workload.GenOptions{Seed: 1})
	iters := 0
	for _, j := range trace.Jobs {
		iters += j.Iterations
	}
	return trace, iters
}

func BenchmarkSimulateSalus100(b *testing.B) {
	trace, iters := salus100()
	for _, name := range core.Names() {
		b.Run(name, func(b *testing.B) {
			pol, _ := core.Lookup(name)
			for b.Loop() {
				if err := Run(trace, Options{Policy: pol, Device: device.DefaultDevice()}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(iters)*float64(b.N)/b.Elapsed().Seconds(), "iterations/s")
		})
	}
}

// BenchmarkSimulateSalus100Metrics is the run of eval: every event goes to a
// metrics.Collector, and no log is written. It reports the allocations per
// simulated iteration, all of the run's together (set-up included).
func BenchmarkSimulateSalus100Metrics(b *testing.B) {
	trace, iters := salus100()
	for _, name := range core.Names() {
		b.Run(name, func(b *testing.B) {
			pol, _ := core.Lookup(name)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				c := metrics.NewCollector()
				if err := Run(trace, Options{Policy: pol, Device: device.DefaultDevice(), Sink: c}); err != nil {
					b.Fatal(err)
				}
				if _, err := c.Result(); err != nil {
					b.Fatal(err)
				}
			}
			runtime.ReadMemStats(&after)
			n := float64(iters) * float64(b.N)
			b.ReportMetric(n/b.Elapsed().Seconds(), "iterations/s")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/iteration")
		})
	}
}
