package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/sim/simtest"
	"github.com/salusgo/salus/workload"
)

// Lanes side by side whose demands pass 1 together, each taking turns among
// jobs of different demands: every turn that changes the job of a lane
// changes the GPU's share, so a stretch runs the GPU's clock boundary by
// boundary (sideBySide). Under every registered scheme, every job's arrival,
// first service, end and GPU time are the per-iteration engine's, on one GPU
// and on two; and pack takes nearly all its iterations in stretches, many of
// them side by side (before, each was an event: 0).
func TestLanesSideBySideAreExact(t *testing.T) {
	for _, ms := range simtest.Schemes() {
		p, err := core.Compose(ms[0], ms[1], core.DefaultModeParams())
		if err != nil {
			t.Fatal(err)
		}
		name := ms[0] + "/" + ms[1]
		first, seeds := int64(2), int64(2) // two GPUs
		if name == "salus/pack" {
			first, seeds = 1, 4
		}
		sided, forwardedIters, all := 0, 0, 0
		for seed := first; seed <= seeds; seed++ {
			tr := demandsDrawn(salusTrace(t, seed, 60), seed)
			gpus := 1 + int(seed%2)
			resultOf := func(perIteration bool) metrics.Result {
				c := metrics.NewCollector()
				dev := device.DefaultDevice()
				sink := eventlog.Sinks{c, simtest.NewChecker(t, dev.CapacityMiB, p.Mode == core.ModeExclusive)}
				var ff forwarded
				if err := run(tr, Options{Policy: p, Device: dev, GPUs: gpus, Sink: sink}, perIteration, &ff); err != nil {
					t.Fatalf("%s seed %d: %v", name, seed, err)
				}
				res, err := c.Result()
				if err != nil {
					t.Fatal(err)
				}
				if !perIteration {
					sided += ff.sideBySide
					forwardedIters += ff.iterations
					for _, j := range tr.Jobs {
						all += j.Iterations
					}
				}
				return res
			}
			if err := sameResults(resultOf(true), resultOf(false)); err != nil {
				t.Fatalf("%s seed %d on %d GPUs: side by side, %v", name, seed, gpus, err)
			}
		}
		if name == "salus/pack" && (forwardedIters < all*95/100 || sided < all/4) {
			t.Errorf("%s: %d of %d iterations in stretches, %d of them side by side; want 95%% and a quarter", name, forwardedIters, all, sided)
		}
	}
}

// demandsDrawn gives each job of tr a demand of its own, drawn in [0.2, 1].
func demandsDrawn(tr *workload.Trace, seed int64) *workload.Trace {
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	for i := range tr.Jobs {
		prof := *tr.Jobs[i].Profile // shared with the catalog: a copy of its own
		prof.Demand = 0.2 + 0.8*rng.Float64()
		tr.Jobs[i].Profile = &prof
	}
	return tr
}

// The lanes side by side of several GPUs run together, in time order: no
// GPU's run goes past the first instant where another GPU's stops (a job's
// first or last iteration), so that the boundaries run are those taken, and
// a few more where a run is cut again. On 4 GPUs under pack, every job's
// results are the per-iteration engine's, and the boundaries run are within
// 1.5 times those taken (on 8 GPUs of the long jobs' trace, each GPU run to
// the next arrival first ran 2,136 million for 240 million taken).
func TestSidesRunTogether(t *testing.T) {
	p, err := core.Compose("salus", "pack", core.DefaultModeParams())
	if err != nil {
		t.Fatal(err)
	}
	tr, err := workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Salus100, Seed: 5, Jobs: 200, Load: 16})
	if err != nil {
		t.Fatal(err)
	}
	tr = demandsDrawn(tr, 5)
	dev := device.DefaultDevice()
	var ff forwarded
	resultOf := func(perIteration bool) metrics.Result {
		c := metrics.NewCollector()
		sink := eventlog.Sinks{c, simtest.NewChecker(t, dev.CapacityMiB, false)}
		if err := run(tr, Options{Policy: p, Device: dev, GPUs: 4, Sink: sink}, perIteration, &ff); err != nil {
			t.Fatal(err)
		}
		res, err := c.Result()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if err := sameResults(resultOf(true), resultOf(false)); err != nil {
		t.Fatalf("4 GPUs side by side: %v", err)
	}
	if ff.sideBySide == 0 || ff.sideRun > ff.sideBySide*3/2 {
		t.Errorf("the sides ran %d boundaries and took %d; want some, and at most 1.5 times as many run", ff.sideRun, ff.sideBySide)
	}
	t.Logf("boundaries run %d, taken %d", ff.sideRun, ff.sideBySide)
}
