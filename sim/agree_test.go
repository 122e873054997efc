package sim

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/interference"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/sim/simtest"
	"github.com/salusgo/salus/workload"
)

// agreeCase is one case of the agreement harness (bothEngines): a trace, the
// options to run it under, and what the case needs beside.
type agreeCase struct {
	name  string // names the case in a failure
	trace *workload.Trace
	// opts are the run's options; the harness sets their Sink, and runs with
	// stretches and without whatever their PerIteration says.
	opts Options
	// check adds to each run's sinks a simtest.Checker of the device's memory
	// (each GPU's on a cluster), exclusive under exclusive GPUs.
	check bool
	// maxSegs, when not 0, bounds a passive lane's clock segments during the
	// runs (cut short, they are caught up within a run).
	maxSegs int
	// classes, when not nil, are the jobs' priority classes for the collector:
	// the results then hold per-class figures.
	classes map[string]int
	// sinks, when not nil, gives further sinks to each engine's run. The
	// per-iteration engine runs first, so that a sink of the stretched run may
	// hold what the per-iteration run logged.
	sinks func(perIteration bool) eventlog.Sink
}

// agreement is what the two engines made of a case.
type agreement struct {
	slow, fast metrics.Result // the per-iteration engine's results, and the stretches'
	ff         forwarded      // what the stretches took
	// diff says how the stretches' results differ from the per-iteration
	// engine's (sameResults): nil when every job's is the same.
	diff error
}

// bothEngines is the agreement harness: it runs c's trace under c's options
// through the deliberately naive engine (every boundary an event of the
// core's) and through the stretches, and says how every job's result
// differs. A run that fails fails the test.
func bothEngines(t testing.TB, c agreeCase) agreement {
	t.Helper()
	if c.maxSegs > 0 {
		defer func(n int) { maxSegs = n }(maxSegs)
		maxSegs = c.maxSegs
	}
	var a agreement
	for _, perIteration := range []bool{true, false} {
		col := metrics.NewCollector()
		if c.classes != nil {
			col.SetClasses(c.classes)
		}
		sinks := eventlog.Sinks{col}
		if c.check {
			sinks = append(sinks, checkerOf(t, c.opts))
		}
		if c.sinks != nil {
			if s := c.sinks(perIteration); s != nil {
				sinks = append(sinks, s)
			}
		}
		o := c.opts
		o.Sink, o.PerIteration = sinks, perIteration
		var ff forwarded
		engine := "per iteration"
		if !perIteration {
			engine = "with stretches"
		}
		if err := run(c.trace, o, perIteration, &ff); err != nil {
			t.Fatalf("%s, %s: %v", c.name, engine, err)
		}
		res, err := col.Result()
		if err != nil {
			t.Fatalf("%s, %s: %v", c.name, engine, err)
		}
		if perIteration {
			if ff != (forwarded{}) {
				t.Fatalf("%s, per iteration: the naive engine took a stretch: %+v", c.name, ff)
			}
			a.slow = res
		} else {
			a.fast, a.ff = res, ff
		}
	}
	a.diff = sameResults(a.slow, a.fast)
	return a
}

// sameResults says how b differs from a beyond the rounding of sums of GPU time.
func sameResults(a, b metrics.Result) error {
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Max(1, math.Abs(x)) }
	if len(a.Completion) != len(b.Completion) {
		return fmt.Errorf("%d jobs finished, want %d", len(b.Completion), len(a.Completion))
	}
	for i, x := range a.Completion {
		y := b.Completion[i]
		gx, gy := x.GPUS, y.GPUS
		x.GPUS, y.GPUS = 0, 0
		if x != y || !near(gx, gy) {
			return fmt.Errorf("job %d: %+v (GPU %v), want %+v (GPU %v)", i, y, gy, x, gx)
		}
	}
	ga, gb := a.GPUBusy, b.GPUBusy
	a.GPUBusy, b.GPUBusy = 0, 0
	pa, pb := a.PerGPU, b.PerGPU
	a.PerGPU, b.PerGPU = nil, nil
	a.Completion, b.Completion = nil, nil
	if !near(ga, gb) || len(pa) != len(pb) || !reflect.DeepEqual(a, b) {
		return fmt.Errorf("the run's figures differ:\n%+v %v\n%+v %v", b, gb, a, ga)
	}
	for i := range pa {
		x, y := pa[i], pb[i]
		if !near(x.Busy, y.Busy) {
			return fmt.Errorf("GPU %d busy %v, want %v", i, y.Busy, x.Busy)
		}
	}
	return nil
}

// checkerOf is a checker of the memory of o's GPUs (a cluster's each its own).
func checkerOf(t testing.TB, o Options) *simtest.Checker {
	c := simtest.NewChecker(t, o.Device.CapacityMiB, o.Policy.Mode == core.ModeExclusive)
	if cl := o.Cluster; cl != nil {
		var capacities []float64
		for _, node := range cl.Nodes {
			for range node.GPUs() {
				capacities = append(capacities, node.Device.CapacityMiB)
			}
		}
		c.CapacityOf = func(g int) float64 { return capacities[g] }
	}
	return c
}

// agree runs a random trace of seed under scheme ms on gpus GPUs through both
// engines (bothEngines), under the co-location model m (nil: today's rule),
// with the passive lanes' segments bounded by segs (0: as they are), and says
// how the results differ; it also returns what the stretches took.
func agree(t testing.TB, ms [2]string, seed uint64, jobs, gpus, segs int, m *interference.Model) (forwarded, error) {
	return agreeGangs(t, ms, seed, jobs, gpus, segs, 0, m)
}

// agreeGangs is agree with every gangs-th job a gang of two GPUs or more (at
// most gpus); none where gangs or gpus is below 2.
func agreeGangs(t testing.TB, ms [2]string, seed uint64, jobs, gpus, segs, gangs int, m *interference.Model) (forwarded, error) {
	p, err := core.Compose(ms[0], ms[1], core.DefaultModeParams())
	if err != nil {
		t.Fatal(err)
	}
	dev := device.DefaultDevice()
	dev.IterOverheadS = float64(seed%4/3) * 0.0005
	dev.SwitchS = float64(seed%3/2) * 0.0003 // a switch delays the next iteration
	dev.StartupIsGPUWork = (seed-1)%6 >= 2   // the first iteration carries the start-up
	tr := simtest.RandomTrace(seed, jobs)
	if gangs >= 2 && gpus >= 2 {
		for i := range tr.Jobs {
			if i%gangs == 0 {
				tr.Jobs[i].GPUs = 2 + (i/gangs)%(gpus-1)
			}
		}
	}
	a := bothEngines(t, agreeCase{
		name:    fmt.Sprintf("%s/%s seed %d on %d GPUs", ms[0], ms[1], seed, gpus),
		trace:   tr,
		opts:    Options{Policy: p, Device: dev, GPUs: gpus, Interference: m},
		check:   true,
		maxSegs: segs,
	})
	return a.ff, a.diff
}

// Under the co-location model the stretches take what a GPU running one job
// at a time does, what jobs side by side that go on alone in their lanes do
// (each on a clock of its own), and pack's turns side by side (a sideBySide
// on the lanes' own clocks); every job's result is the per-iteration
// engine's: every registered scheme, on one, two and three GPUs.
func TestStretchesAreExactUnderTheModel(t *testing.T) {
	m := interference.Builtin()
	var all forwarded
	for _, ms := range simtest.Schemes() {
		for seed := uint64(1); seed <= 15; seed++ {
			gpus := 1 + int(seed%3)
			// Every third seed cuts a passive lane's clock segments short, so
			// that they are caught up within a run.
			segs := 1 << 12
			if seed%3 == 0 {
				segs = 2
			}
			ff, err := agree(t, ms, seed, 30, gpus, segs, m)
			if err != nil {
				t.Fatalf("%s/%s seed %d on %d GPUs (segments %d) under the model: with stretches, %v", ms[0], ms[1], seed, gpus, segs, err)
			}
			all.iterations += ff.iterations
			all.ownClocks += ff.ownClocks
			all.sideBySide += ff.sideBySide
		}
	}
	if all.iterations == 0 || all.ownClocks == 0 || all.sideBySide == 0 {
		t.Fatalf("stretches took %d iterations under the model, %d of them side by side on clocks of their own, %d in a sideBySide: want all three",
			all.iterations, all.ownClocks, all.sideBySide)
	}
	t.Logf("stretches took %d iterations, %d of them side by side on clocks of their own, %d in a sideBySide", all.iterations, all.ownClocks, all.sideBySide)
}

// FuzzEnginesAgree is the agreement harness as a fuzz target: a random trace,
// scheme, GPU count and model (today's rule or the built-in co-location
// model), run with the stretches and per iteration, must give every job the
// same result. go test ./sim -fuzz FuzzEnginesAgree explores beyond the seeds.
func FuzzEnginesAgree(f *testing.F) {
	for i := range 8 {
		f.Add(uint64(i+1), uint8(i*5), uint8(i%3), i%2 == 0, uint8(i%4))
	}
	schemes := simtest.Schemes()
	builtin := interference.Builtin()
	f.Fuzz(func(t *testing.T, seed uint64, scheme, gpus uint8, model bool, gangs uint8) {
		var m *interference.Model
		if model {
			m = builtin
		}
		ms := schemes[int(scheme)%len(schemes)]
		// gangs: every 2nd to 5th job a gang, or none (0 and 1).
		n, every := 1+int(gpus%3), int(gangs%6)
		if _, err := agreeGangs(t, ms, seed, 12, n, 0, every, m); err != nil {
			t.Fatalf("%s/%s seed %d on %d GPUs (model %v, gangs every %d): %v", ms[0], ms[1], seed, n, model, every, err)
		}
	})
}
