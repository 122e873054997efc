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
