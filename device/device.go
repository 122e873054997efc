// Package device holds the GPUs the project knows: the named presets with the
// sources of their figures, and the parameters of one device (memory, compute
// speed relative to the P100 the catalog was measured on, iteration and switch
// overheads, time-slicing, host-link bandwidth), with the arithmetic those figures
// imply (an iteration's time on the device, a copy's time, a job's standalone and
// declared time).
//
// Each preset registers itself from its own file (p100.go, a100.go, ...) with an
// explicit order (registry.go), and every list of them a user reads comes from
// the registry (Names). Match says which preset a GPU is, by its name as
// nvidia-smi or a cluster trace writes it and its memory, and refuses a name it
// does not know; Detect and ParseSMI give salus serve --device auto the device of
// the node's GPU, an unknown one by its own name at speed 1, never another card's.
//
// It is shared by the simulator (sim), the daemon's emulated GPU (server), the
// evaluation suites (eval), sweeps and the command line, so that a device means
// the same everywhere. It is plain data and pure functions over workload's
// profiles and traces: it must not import the simulator, the server or any other
// engine, keep a clock or state, or hold scheduling or sharing logic (how
// iterations share the device over time is the simulator's device model, sim.GPU,
// which takes a Device and is driven by a clock).
package device

import (
	"fmt"

	"github.com/salusgo/salus/interference"
	"github.com/salusgo/salus/workload"
)

// Device is the model of one GPU: its memory and the figures that say how long
// work takes on it. Every figure can be overridden.
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
	// Speed is the card's compute speed relative to the P100, the card every
	// catalog profile was measured on: 1 for the P100; an iteration that takes t
	// seconds on the P100 takes t/Speed here. It scales iterations only: start-up
	// is process and graph creation on the CPU and stays as measured. 0 means 1.
	Speed float64 `json:"speed"`
	// GPUs is how many of this GPU the node has (0 means one): each has its own
	// lanes, and a job runs on one of them, or on several at once (a gang job).
	GPUs int `json:"gpus,omitempty"`
	// GPUPlacement names how a job's GPU is chosen (core.LookupGPUPlacement; empty:
	// the default, least-loaded).
	GPUPlacement string `json:"gpu_placement,omitempty"`
	// StartupIsGPUWork makes a job's start-up GPU work that its first iteration
	// carries, instead of time off the GPU before it: what TensorFlow 1.x does under
	// Salus, where the first session.run builds the executor, initializes the
	// variables and autotunes cuDNN's convolution algorithms on the GPU
	// (TF_CUDNN_USE_AUTOTUNE is on by default), and Salus schedules that run like any
	// other iteration of the job's lane. Off (the default), start-up overlaps other
	// jobs' iterations, as it does for a PyTorch job under salus serve, which builds
	// its model before it asks for its first iteration. Only the simulator reads it.
	StartupIsGPUWork bool `json:"startup_is_gpu_work,omitempty"`
	// CoLocation, when set, is how jobs side by side on this GPU slow each
	// other (package interference): each job at its own rate, by who runs
	// beside it, in place of one share by demands (nil: today's rule).
	// CoLocationName names it in reports ("measured", or the model file's name).
	CoLocation     *interference.Model `json:"-"`
	CoLocationName string              `json:"co_location,omitempty"`
}

// CoLocationLine says in a line how jobs side by side on the device slow each
// other: under the co-location model CoLocationName, or (empty) today's rule.
func (d Device) CoLocationLine() string {
	if d.CoLocationName == "" {
		return ""
	}
	return "Jobs side by side: co-location model " + d.CoLocationName + " (salus interference show; --interference rule: one share by demands)."
}

// Count is how many GPUs the node has: GPUs, at least one.
func (d Device) Count() int { return max(d.GPUs, 1) }

// IterS is how long an iteration that takes p100S seconds on the P100 takes on
// this device: p100S/Speed (a Speed of zero or less counts as 1).
func (d Device) IterS(p100S float64) float64 {
	if d.Speed <= 0 {
		return p100S
	}
	return p100S / d.Speed
}

// StandaloneS is how long a job of the profile takes alone on this device: its
// start-up, unscaled, plus its iterations at this device's speed.
func (d Device) StandaloneS(p workload.Profile, iterations int) float64 {
	return p.StartupS + float64(iterations)*d.IterS(p.IterS)
}

// DeclaredS is the GPU time a job declares to SRTF on this device: the trace's own
// declared_s when it gives one (taken as is), else its iterations at this
// device's speed (start-up excluded).
func (d Device) DeclaredS(j workload.Job) float64 { return j.DeclaredOn(d.IterS(j.Profile.IterS)) }

// Emulate returns a copy of t whose jobs take this device's times, for engines that
// replay profile times as they are (the live engine's emulated workers): each
// profile's iteration time becomes IterS(its P100 time), start-up stays, and each
// job declares DeclaredS. At speed 1 the copy equals t.
func (d Device) Emulate(t *workload.Trace) *workload.Trace {
	c := *t
	c.Jobs = make([]workload.Job, len(t.Jobs))
	for i, j := range t.Jobs {
		j.DeclaredS = d.DeclaredS(j)
		// A copy: the profile is shared with t's other jobs and the catalog.
		c.Jobs[i] = j.WithProfile(func(p *workload.Profile) { p.IterS = d.IterS(p.IterS) })
	}
	return &c
}

// Describe names the device for people: name, usable memory and speed.
func (d Device) Describe() string {
	desc := fmt.Sprintf("%s (%.0f MiB usable, speed %.3gx P100)", d.Name, d.CapacityMiB, d.Speed)
	if d.Speed <= 0 { // a live daemon's own GPU or CPU: no model of its speed
		desc = fmt.Sprintf("%s (%.0f MiB usable)", d.Name, d.CapacityMiB)
	}
	if d.Count() > 1 {
		place := d.GPUPlacement
		if place == "" {
			place = "least-loaded"
		}
		desc = fmt.Sprintf("%d x %s, %s placement", d.Count(), desc, place)
	}
	return desc
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
