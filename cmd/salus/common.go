package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/workload"
	"github.com/spf13/cobra"
)

// deviceFlags are the device-model flags every simulating command takes.
type deviceFlags struct {
	preset       string
	capacityMiB  float64
	iterOverhead float64
	switchCost   float64
	slice        float64
	ctxSwitch    float64
	pcie         float64
	speed        float64
	modes        core.ModeParams
}

func (d *deviceFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&d.preset, "device", "p100", "device preset: "+strings.Join(device.Names(), ", "))
	f.Float64Var(&d.capacityMiB, "capacity-mib", 0, "usable device memory in MiB (default: the preset's)")
	f.Float64Var(&d.iterOverhead, "iter-overhead", 0, "scheduling overhead added to every iteration, seconds")
	f.Float64Var(&d.switchCost, "switch-cost", 0, "cost of switching jobs in a lane at an iteration boundary, seconds")
	f.Float64Var(&d.slice, "slice", 0, "time-slicing: slice length, seconds (default 0.002)")
	f.Float64Var(&d.ctxSwitch, "context-switch", 0, "time-slicing: context switch cost per slice, seconds (default 0.00005)")
	f.Float64Var(&d.pcie, "pcie-gbps", 0, "suspend/resume: host-device copy bandwidth, GB/s (default: the preset's)")
	f.Float64Var(&d.speed, "speed", 0, "compute speed relative to the P100 the profiles were measured on: iterations take P100 time / speed; start-up is not scaled (default 0: the preset's)")
	def := core.DefaultModeParams()
	f.Float64Var(&d.modes.ContextMiB, "context-mib", def.ContextMiB, "time-slicing: device memory of one process's CUDA context, MiB")
	f.Float64Var(&d.modes.MPSContextMiB, "mps-context-mib", def.MPSContextMiB, "MPS: device memory per client, MiB")
	f.IntVar(&d.modes.MPSMaxClients, "mps-clients", def.MPSMaxClients, "MPS: clients per GPU (16 before Volta, 48 after)")
	f.Float64Var(&d.modes.SuspendQuantumS, "suspend-quantum", def.SuspendQuantumS, "suspend/resume: seconds a job keeps the GPU before a switch")
}

func (d *deviceFlags) device() (device.Device, error) {
	dev, err := device.Preset(d.preset)
	if err != nil {
		return dev, err
	}
	if d.speed < 0 {
		return dev, fmt.Errorf("--speed %v: give a positive speed relative to the P100, or 0 for the preset's", d.speed)
	}
	m := d.modes
	for _, v := range []float64{d.capacityMiB, d.iterOverhead, d.switchCost, d.slice, d.ctxSwitch, d.pcie, m.ContextMiB, m.MPSContextMiB, m.SuspendQuantumS, float64(m.MPSMaxClients)} {
		if v < 0 {
			return dev, fmt.Errorf("device and mode parameters must not be negative (see salus %s --help)", "eval")
		}
	}
	if d.capacityMiB > 0 {
		dev.CapacityMiB = d.capacityMiB
	}
	if d.slice > 0 {
		dev.SliceS = d.slice
	}
	if d.ctxSwitch > 0 {
		dev.ContextSwitchS = d.ctxSwitch
	}
	if d.pcie > 0 {
		dev.PCIeGBps = d.pcie
	}
	if d.speed > 0 {
		dev.Speed = d.speed
	}
	dev.IterOverheadS, dev.SwitchS = d.iterOverhead, d.switchCost
	return dev, nil
}

// traceFlags choose a trace: a file, or the generated salus100.
type traceFlags struct {
	file string
	seed int64
	load float64
}

func (t *traceFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&t.file, "trace", "", "trace file (CSV with a header, or JSON Lines); default: the generated salus100 trace")
	f.Int64Var(&t.seed, "seed", 1, "seed of the generated trace")
	f.Float64Var(&t.load, "load", 1, "arrival-rate multiplier of the generated trace")
}

func (t *traceFlags) trace() (*workload.Trace, error) {
	if t.file != "" {
		return workload.ReadTraceFile(t.file, workload.Default())
	}
	return workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Salus100, Seed: t.seed, Load: t.load})
}

func checkFormat(format string, allowed ...string) error {
	for _, a := range allowed {
		if format == a {
			return nil
		}
	}
	return fmt.Errorf("unknown --format %q: choose %s", format, strings.Join(allowed, ", "))
}

// createOut creates the output directory, refusing a path that is a file.
func createOut(dir string) error {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return fmt.Errorf("--out %s is a file, not a directory", dir)
	}
	return os.MkdirAll(dir, 0o755)
}

// printReport prints a suite's report in the chosen format.
func printReport(w io.Writer, rep eval.Output, format string) error {
	switch format {
	case "json":
		return rep.JSON(w)
	case "csv":
		return rep.CSV(w)
	}
	return rep.Table(w)
}
