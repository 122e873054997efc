package sim

import (
	"fmt"
	"sort"
	"strings"
)

// Device is the simulator's model of one GPU. Every figure can be overridden.
type Device struct {
	Name string `json:"name"`
	// TotalMiB is the card's memory; CapacityMiB what jobs can use of it (the rest
	// goes to the CUDA context, the framework and fragmentation).
	TotalMiB    float64 `json:"total_mib"`
	CapacityMiB float64 `json:"capacity_mib"`
	// IterOverheadS is added to every iteration under a sharing scheduler: the round
	// trip that gates the iteration. The GPU is not busy during it. Calibrate it
	// against what `salus serve` measures; Salus reported it small.
	IterOverheadS float64 `json:"iter_overhead_s"`
	// SwitchS is added to an iteration that follows another job's in the same lane.
	// With every admitted job's persistent memory resident, switching at an
	// iteration boundary copies nothing, so Salus's cost is near zero.
	SwitchS float64 `json:"switch_s"`
	// SliceS and ContextSwitchS model CUDA time-slicing between processes: the GPU
	// runs one process for a slice, then pays a context switch. Pascal and newer
	// preempt compute at instruction level; a switch costs tens of microseconds and
	// the driver's default slice is a couple of milliseconds.
	SliceS         float64 `json:"slice_s"`
	ContextSwitchS float64 `json:"context_switch_s"`
	// PCIeGBps is the host-device copy bandwidth suspend/resume moves persistent
	// memory over (GB/s): about 12 of PCIe 3.0 x16's nominal 15.75, as measured copies
	// reach on the P100's host link.
	PCIeGBps float64 `json:"pcie_gbps"`
	// Speed is the device's compute speed relative to the P100 of the reference
	// measurements: an iteration of t seconds there takes t/Speed here.
	Speed float64 `json:"speed"`
}

// TimesliceEfficiency is the share of a time-sliced GPU that does work when more
// than one process is resident.
func (d Device) TimesliceEfficiency() float64 {
	if d.SliceS <= 0 {
		return 1
	}
	return d.SliceS / (d.SliceS + d.ContextSwitchS)
}

// CopyS is how long copying mib MiB over PCIe takes.
func (d Device) CopyS(mib float64) float64 {
	if d.PCIeGBps <= 0 {
		return 0
	}
	return mib * (1 << 20) / (d.PCIeGBps * 1e9)
}

// Presets are the devices the simulator knows by name. The P100 is the card of the
// reference measurements: 16 GiB, of which about 14 GiB were usable. The newer
// cards keep the same share for the context and the framework (7/8 usable).
// The newer cards have faster host links (PCIe 4.0 and 5.0), taken at the same
// share of nominal. Profiles stay the P100's: a preset changes memory, not speed.
var Presets = map[string]Device{
	"p100":     {Name: "P100", TotalMiB: 16 << 10, CapacityMiB: 14 << 10, PCIeGBps: 12},
	"v100":     {Name: "V100-32GB", TotalMiB: 32 << 10, CapacityMiB: 28 << 10, PCIeGBps: 12},
	"a100":     {Name: "A100-80GB", TotalMiB: 80 << 10, CapacityMiB: 70 << 10, PCIeGBps: 24},
	"h100":     {Name: "H100-80GB", TotalMiB: 80 << 10, CapacityMiB: 70 << 10, PCIeGBps: 48},
	"h200":     {Name: "H200", TotalMiB: 141 << 10, CapacityMiB: 123 << 10, PCIeGBps: 48},
	"a100-40g": {Name: "A100-40GB", TotalMiB: 40 << 10, CapacityMiB: 35 << 10, PCIeGBps: 24},
}

// Time-slicing defaults, shared by every preset.
const (
	defaultSliceS         = 2e-3
	defaultContextSwitchS = 50e-6
)

// DefaultDevice is the P100 of the reference measurements.
func DefaultDevice() Device { d, _ := Preset("p100"); return d }

// Preset returns a named device.
func Preset(name string) (Device, error) {
	d, ok := Presets[strings.ToLower(name)]
	d.SliceS, d.ContextSwitchS = defaultSliceS, defaultContextSwitchS
	if !ok {
		var names []string
		for n := range Presets {
			names = append(names, n)
		}
		sort.Strings(names)
		return Device{}, fmt.Errorf("unknown device %q: choose one of %s", name, strings.Join(names, ", "))
	}
	return d, nil
}

// IterS is how long an iteration that takes p100S seconds on the P100 takes on d.
func (d Device) IterS(p100S float64) float64 {
	if d.Speed <= 0 {
		return p100S
	}
	return p100S / d.Speed
}
