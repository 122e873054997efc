package sim

import (
	"context"

	"github.com/salusgo/salus/core"
	engines "github.com/salusgo/salus/engine"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/interference"
	"github.com/salusgo/salus/metrics"
)

// Engine is the simulator as an engine (package engine): the reference engine,
// deterministic and in virtual time, whose runs go in parallel.
type Engine struct {
	// PerIteration runs and logs every iteration, not stretches (Options.PerIteration).
	PerIteration bool
	// Interference is the co-location model (Options.Interference); nil: one
	// share per GPU by demands.
	Interference *interference.Model
}

func init() { engines.Register(0, Engine{}) }

// Name is "sim".
func (Engine) Name() string { return "sim" }

// Description is one line for the help.
func (Engine) Description() string { return "the simulator: the device model on a virtual clock" }

// Run simulates r and computes its metrics from the events, which also go to
// r.LogPath and r.Sink when set. The context is not looked at: a simulation takes
// well under a second.
func (e Engine) Run(_ context.Context, r engines.Run) (engines.Outcome, error) {
	out := engines.Outcome{Log: r.LogPath, SinkFed: r.Sink != nil}
	c := metrics.NewCollector()
	if prio := r.Trace.Priorities(); prio != nil {
		c.SetClasses(prio)
	}
	sinks := eventlog.Sinks{c}
	if r.Sink != nil {
		sinks = append(sinks, r.Sink)
	}
	var file *eventlog.File
	if r.LogPath != "" {
		var err error
		if file, err = eventlog.Create(r.LogPath); err != nil {
			return out, err
		}
		sinks = append(sinks, file)
	}
	o := Options{Policy: r.Policy, Device: r.Device, Sink: sinks, PerIteration: e.PerIteration, Cluster: r.Cluster, Interference: e.Interference}
	if r.Cluster != nil {
		np, err := core.LookupNodePlacement(r.NodePlacement)
		if err != nil {
			return out, err
		}
		o.NodePlacement = np
	}
	err := Run(r.Trace, o)
	if file != nil {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return out, err
	}
	out.Result, err = c.Result()
	return out, err
}
