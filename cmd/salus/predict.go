package main

import (
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/history"
)

// predictLive puts, beside each run of a live daemon's log in rep, what the
// simulator predicts for the same jobs: the trace salus trace from-log gives
// without a catalog (each job with the iteration time, start-up and memory its
// log measured, on the daemon's clock, so a time-scaled replay compares in its
// own time), under the run's policy and mode, on a device of the memory the
// daemon scheduled and of speed 1 (the measured times are already the device's).
// A log of no iteration predicts nothing.
func predictLive(rep *eval.Report) error {
	for _, run := range rep.Runs {
		l, err := history.Read(run.Log)
		if err != nil || (l.Engine != "" && l.Engine != "live") {
			continue
		}
		t, _, err := l.Trace(nil, rep.Trace.Name)
		if err != nil {
			continue
		}
		dev, err := device.Preset("p100")
		if err != nil {
			return err
		}
		dev.Name, dev.Speed = "the live run's measured times", 1
		dev.GPUs, dev.GPUPlacement = rep.Device.GPUs, rep.Device.GPUPlacement
		if rep.Device.CapacityMiB > 0 {
			dev.CapacityMiB = rep.Device.CapacityMiB
		}
		sim, err := eval.Simulate(t, eval.Scheme{Policy: run.Policy, Mode: run.Mode}, core.DefaultModeParams(), dev, "")
		if err != nil {
			return err
		}
		rep.Predicted = append(rep.Predicted, eval.Predict(t, run, sim))
	}
	return nil
}
