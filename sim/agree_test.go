package sim

import (
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/interference"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/sim/simtest"
)

// agree runs a random trace of seed under scheme ms on gpus GPUs with the
// stretches and boundary by boundary, under the co-location model m (nil:
// today's rule), and says how the results differ; it also returns what the
// stretches took.
func agree(t testing.TB, ms [2]string, seed uint64, jobs, gpus int, m *interference.Model) (forwarded, error) {
	p, err := core.Compose(ms[0], ms[1], core.DefaultModeParams())
	if err != nil {
		t.Fatal(err)
	}
	trace := simtest.RandomTrace(seed, jobs)
	resultOf := func(noFF bool) (metrics.Result, forwarded) {
		c := metrics.NewCollector()
		dev := device.DefaultDevice()
		dev.IterOverheadS = float64(seed%4/3) * 0.0005
		dev.SwitchS = float64(seed%3/2) * 0.0003 // a switch delays the next iteration
		dev.StartupIsGPUWork = (seed-1)%6 >= 2   // the first iteration carries the start-up
		var e forwarded
		if err := run(trace, Options{Policy: p, Device: dev, GPUs: gpus, Interference: m,
			Sink: eventlog.Sinks{c, simtest.NewChecker(t, dev.CapacityMiB, p.Mode == core.ModeExclusive)}}, noFF, &e); err != nil {
			t.Fatalf("%s/%s seed %d: %v", ms[0], ms[1], seed, err)
		}
		res, err := c.Result()
		if err != nil {
			t.Fatalf("%s/%s seed %d: %v", ms[0], ms[1], seed, err)
		}
		return res, e
	}
	slow, _ := resultOf(true)
	fast, ff := resultOf(false)
	return ff, sameResults(slow, fast)
}

// Under the co-location model the stretches take what a GPU running one job
// at a time does, what jobs side by side that go on alone in their lanes do
// (each on a clock of its own), and pack's turns side by side (a sideBySide
// on the lanes' own clocks); every job's result is the per-iteration
// engine's: every registered scheme, on one, two and three GPUs.
func TestStretchesAreExactUnderTheModel(t *testing.T) {
	m := interference.Builtin()
	var all forwarded
	defer func(n int) { maxSegs = n }(maxSegs)
	for _, ms := range simtest.Schemes() {
		for seed := uint64(1); seed <= 15; seed++ {
			gpus := 1 + int(seed%3)
			// Every third seed cuts a passive lane's clock segments short, so
			// that they are caught up within a run.
			maxSegs = 1 << 12
			if seed%3 == 0 {
				maxSegs = 2
			}
			ff, err := agree(t, ms, seed, 30, gpus, m)
			if err != nil {
				t.Fatalf("%s/%s seed %d on %d GPUs (segments %d) under the model: with stretches, %v", ms[0], ms[1], seed, gpus, maxSegs, err)
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
		f.Add(uint64(i+1), uint8(i*5), uint8(i%3), i%2 == 0)
	}
	schemes := simtest.Schemes()
	builtin := interference.Builtin()
	f.Fuzz(func(t *testing.T, seed uint64, scheme, gpus uint8, model bool) {
		var m *interference.Model
		if model {
			m = builtin
		}
		ms := schemes[int(scheme)%len(schemes)]
		if _, err := agree(t, ms, seed, 12, 1+int(gpus%3), m); err != nil {
			t.Fatalf("%s/%s seed %d on %d GPUs (model %v): %v", ms[0], ms[1], seed, 1+int(gpus%3), model, err)
		}
	})
}
