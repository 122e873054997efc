package sweep

import (
	"fmt"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/sim"
	"github.com/salusgo/salus/workload"
)

// DefaultMode runs each policy in its own sharing mode.
const DefaultMode = "default"

// Metrics are the names of the metrics a simulated run reports, in table order.
var Metrics = []string{"avg_jct_s", "p95_jct_s", "makespan_s", "avg_queuing_s", "gpu_busy"}

// resolve returns the policy to run for a policy and sharing mode. Today every
// policy has exactly one mode (fifo: exclusive, the others: salus lanes); when the
// simulator gains modes this is the one place that maps (policy, mode) to a run.
func resolve(policy, mode string) (core.Policy, error) {
	p, err := core.Lookup(policy)
	if err != nil {
		return p, err
	}
	if mode != DefaultMode && mode != p.Mode {
		return p, fmt.Errorf("%s under %s: %w", policy, mode, ErrNotApplicable)
	}
	return p, nil
}

// Applicable reports whether a policy runs in a mode, and the mode's name
// ("default" becomes the policy's own mode).
func Applicable(policy, mode string) (string, bool) {
	p, err := resolve(policy, mode)
	return p.Mode, err == nil
}

// Check reports unknown policies (modes that fit no policy are found by Cells).
func Check(g Grid) error {
	for _, p := range g.Policies {
		if _, err := core.Lookup(p); err != nil {
			return err
		}
	}
	if _, err := sim.Preset(g.Device); err != nil {
		return err
	}
	return nil
}

// SimRunner runs a cell in the simulator on the generated salus100 trace of the
// grid's size at the cell's load, on the grid's device with the cell's capacity.
func SimRunner(g Grid) Runner {
	return func(c Cell, seed int64) (map[string]float64, error) {
		p, err := resolve(c.Policy, c.Mode)
		if err != nil {
			return nil, err
		}
		dev, err := sim.Preset(g.Device)
		if err != nil {
			return nil, err
		}
		if c.CapacityMiB > 0 {
			dev.CapacityMiB = c.CapacityMiB
		}
		t, err := workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Salus100, Seed: seed, Jobs: g.Jobs, Load: c.Load})
		if err != nil {
			return nil, err
		}
		col := metrics.NewCollector()
		if err := sim.Run(t, sim.Options{Policy: p, Device: dev, Sink: col}); err != nil {
			return nil, err
		}
		r, err := col.Result()
		if err != nil {
			return nil, err
		}
		return map[string]float64{"avg_jct_s": r.AvgJCTS, "p95_jct_s": r.P95JCTS, "makespan_s": r.MakespanS,
			"avg_queuing_s": r.AvgQueuingS, "gpu_busy": r.GPUBusy}, nil
	}
}
