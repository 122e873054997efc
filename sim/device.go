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
}

// Presets are the devices the simulator knows by name. The P100 is the card of the
// reference measurements: 16 GiB, of which about 14 GiB were usable. The newer
// cards keep the same share for the context and the framework (7/8 usable).
var Presets = map[string]Device{
	"p100":     {Name: "P100", TotalMiB: 16 << 10, CapacityMiB: 14 << 10},
	"v100":     {Name: "V100-32GB", TotalMiB: 32 << 10, CapacityMiB: 28 << 10},
	"a100":     {Name: "A100-80GB", TotalMiB: 80 << 10, CapacityMiB: 70 << 10},
	"h100":     {Name: "H100-80GB", TotalMiB: 80 << 10, CapacityMiB: 70 << 10},
	"h200":     {Name: "H200", TotalMiB: 141 << 10, CapacityMiB: 123 << 10},
	"a100-40g": {Name: "A100-40GB", TotalMiB: 40 << 10, CapacityMiB: 35 << 10},
}

// DefaultDevice is the P100 of the reference measurements.
func DefaultDevice() Device { return Presets["p100"] }

// Preset returns a named device.
func Preset(name string) (Device, error) {
	d, ok := Presets[strings.ToLower(name)]
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
