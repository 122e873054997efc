package sweep

import (
	"fmt"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/workload"
)

// DefaultMode runs each policy in its own sharing mode.
const DefaultMode = "default"

// Metrics are the names of the metrics a simulated run reports, in table order.
var Metrics = []string{"avg_jct_s", "p95_jct_s", "makespan_s", "avg_queuing_s", "gpu_busy"}

// resolve returns the scheme to run for a policy and sharing mode: "default" is
// the policy's own mode (fifo: exclusive, the others: salus lanes); any other mode
// goes through core.Compose, and a pair it refuses is not applicable.
func resolve(policy, mode string) (eval.Scheme, error) {
	p, err := core.Lookup(policy)
	if err != nil {
		return eval.Scheme{}, err
	}
	if mode == DefaultMode {
		return eval.Scheme{Mode: p.Mode, Policy: p.Name}, nil
	}
	if _, err := core.Compose(mode, policy, core.DefaultModeParams()); err != nil {
		return eval.Scheme{}, fmt.Errorf("%s under %s (%v): %w", policy, mode, err, ErrNotApplicable)
	}
	return eval.Scheme{Mode: mode, Policy: p.Name}, nil
}

// Applicable reports whether a policy runs in a mode, and the mode's name
// ("default" becomes the policy's own mode).
func Applicable(policy, mode string) (string, bool) {
	s, err := resolve(policy, mode)
	return s.Mode, err == nil
}

// Check reports unknown policies and devices (modes that fit no policy are found
// by Cells).
func Check(g Grid) error {
	for _, p := range g.Policies {
		if _, err := core.Lookup(p); err != nil {
			return err
		}
	}
	if _, err := device.Preset(g.Device); err != nil {
		return err
	}
	if g.GPUs < 0 || g.GPUs > 4096 {
		return fmt.Errorf("--gpus %d: a node has 1 to 4096 GPUs", g.GPUs)
	}
	_, err := Catalog(g)
	return err
}

// Catalog is the grid's catalog: the default one with its catalog files over it.
func Catalog(g Grid) (*workload.Catalog, error) {
	cat := workload.Default()
	for _, f := range g.Catalogs {
		var err error
		if cat, err = workload.LoadCatalogFile(f, cat); err != nil {
			return nil, fmt.Errorf("catalog: %w", err)
		}
	}
	return cat, nil
}

// SimRunner runs a cell in the simulator on the generated salus100 trace of the
// grid's size at the cell's load, on the grid's device with the cell's capacity,
// through eval.Simulate (the same code path as salus eval).
func SimRunner(g Grid) Runner {
	cat, catErr := Catalog(g)
	return func(c Cell, seed int64) (map[string]float64, error) {
		if catErr != nil {
			return nil, catErr
		}
		s, err := resolve(c.Policy, c.Mode)
		if err != nil {
			return nil, err
		}
		dev, err := device.Preset(g.Device)
		if err != nil {
			return nil, err
		}
		if c.CapacityMiB > 0 {
			dev.CapacityMiB = c.CapacityMiB
		}
		dev.GPUs = g.GPUs
		t, err := workload.Generate(cat, workload.GenOptions{Kind: workload.Salus100, Seed: seed, Jobs: g.Jobs, Load: c.Load})
		if err != nil {
			return nil, err
		}
		r, err := eval.Simulate(t, s, core.DefaultModeParams(), dev, "")
		if err != nil {
			return nil, err
		}
		return map[string]float64{"avg_jct_s": r.AvgJCTS, "p95_jct_s": r.P95JCTS, "makespan_s": r.MakespanS,
			"avg_queuing_s": r.AvgQueuingS, "gpu_busy": r.GPUBusy}, nil
	}
}
