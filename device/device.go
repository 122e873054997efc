// Package device holds the GPUs the project knows: the named presets with the
// sources of their figures, and the parameters of one device (memory, compute
// speed relative to the P100 the catalog was measured on, iteration and switch
// overheads, time-slicing, host-link bandwidth), with the arithmetic those figures
// imply (an iteration's time on the device, a copy's time, a job's standalone and
// declared time).
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
	"sort"
	"strings"

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
		j.Profile.IterS = d.IterS(j.Profile.IterS)
		c.Jobs[i] = j
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

// Presets are the devices known by name. The P100 is the card of the
// reference measurements: 16 GiB, of which about 14 GiB were usable. The newer
// cards keep the same share for the context and the framework (7/8 usable).
// The newer cards have faster host links (PCIe 4.0 and 5.0), taken at the same
// share of nominal.
//
// Speed: the catalog's profiles are FP32 TensorFlow CNN training (ResNet, VGG,
// Inception, ...) timed on a P100 in 2018, so each speed is single-GPU FP32
// training throughput of such CNNs relative to the P100, on the same software
// where the sources allow (speed-ups from newer frameworks are not the card's).
// On Ampere and newer, FP32 code gets TF32 tensor cores by default (TensorFlow
// 2.4+ for convolutions and matrix products, PyTorch for convolutions), so TF32
// figures stand for FP32 there; mixed precision (AMP,
// FP16, FP8) is left out, as the catalog's jobs do not use it. Where a ratio is
// estimated rather than measured, the comment says so. All speeds are for
// training-sized batches: batch-1 inference, bound by kernel launches, gains
// much less from a faster card (ResNet-50 TF batch 1: V100 5.8 ms, A100 5.3 ms in
// the NVIDIA source below), so the inference suite's latencies on the newer
// cards are optimistic.
var Presets = map[string]Device{
	// The reference: Speed 1 by definition. For scale, TensorFlow's own
	// benchmarks (tensorflow.org/performance/benchmarks, DGX-1 P100, TF 1.x,
	// cuDNN 5.1, May 2017, synthetic data, batch 64) give 219 images/s for
	// ResNet-50, 142 for Inception v3, 154 for VGG16, 91.8 for ResNet-152.
	"p100": {Name: "P100", TotalMiB: 16 << 10, CapacityMiB: 14 << 10, PCIeGBps: 12, Speed: 1},
	// 1.4: Dell EMC HPC Innovation Lab, "Deep Learning on V100" (Rengan Xu et
	// al., Sept 2017; same PowerEdge C4130 server, CUDA 9 / cuDNN 7 on both cards,
	// ResNet-50 on ImageNet, NV-Caffe, MXNet and TensorFlow): "in training V100
	// is ~40% faster than P100 with FP32" (>40% for NV-Caffe and MXNet). Dell EMC
	// Ready Solutions for AI reference guide (4 SXM2 GPUs in one node): FP32
	// ResNet-50 1.26x with TensorFlow, 1.52x with MXNet. Peak FP32 (SXM2)
	// 15.7/10.6 TFLOPS = 1.48x. The TensorFlow-only figure is lower; 1.4 rather
	// than 1.26 is a judgment: that figure is from 4-GPU runs, whose
	// synchronization may dilute the card's own speed (not checked), and the other two sources agree
	// on ~1.4-1.5. The 32 GB card computes as the 16 GB one.
	"v100": {Name: "V100-32GB", TotalMiB: 32 << 10, CapacityMiB: 28 << 10, PCIeGBps: 12, Speed: 1.4},
	// 3.0, estimated from the A100-40GB below: the 80 GB card has 1.31x its
	// memory bandwidth (2039 vs 1555 GB/s) and the same compute; +10% is an
	// estimate for bandwidth-bound CNN layers, not a measurement. For the upper
	// side: NVIDIA DeepLearningExamples PyTorch ResNet-50 v1.5 (NGC 21.03),
	// 1 GPU, A100-80GB TF32 938 images/s vs V100-32GB FP32 356 = 2.63x, which
	// would give 1.4 x 2.63 = 3.7 (but mixes in a newer software stack).
	"a100": {Name: "A100-80GB", TotalMiB: 80 << 10, CapacityMiB: 70 << 10, PCIeGBps: 24, Speed: 3.0},
	// 5.5: A100-80GB x 1.85. MLPerf Training v3.0 (June 2023), ResNet-50, two
	// Dell submissions of the same shape (4 Intel Platinum CPUs, 16 GPUs):
	// 16x H100-SXM5-80GB 7.8 min vs 16x A100-SXM-80GB 14.4 min = 1.85x (as read by
	// Silverton Consulting, silvertonconsulting.com, July 2023). MLPerf runs mixed
	// precision; no published TF32 CNN ratio was found, so 1.85 stands for TF32
	// too (an estimate: peak TF32 is 3.2x, memory bandwidth 1.64x, and Lambda's
	// H100 analysis, lambdalabs.com/blog/nvidia-h100-gpu-deep-learning-performance-analysis,
	// expects "~2x" for vision models). Taken as the SXM5 card.
	"h100": {Name: "H100-80GB", TotalMiB: 80 << 10, CapacityMiB: 70 << 10, PCIeGBps: 48, Speed: 5.5},
	// 6.0, estimated: H100 x 1.1. The H200 has the H100 SXM's compute (same
	// TFLOPS) and 1.43x its memory bandwidth (4.8 vs 3.35 TB/s); no published CNN
	// training comparison was found, and +10% is an estimate for the
	// bandwidth-bound part of CNN training.
	"h200": {Name: "H200", TotalMiB: 141 << 10, CapacityMiB: 123 << 10, PCIeGBps: 48, Speed: 6.0},
	// 2.7: V100 x 1.96. NVIDIA DeepLearningExamples TensorFlow ResNet-50 v1.5
	// README (NGC TF 20.06, XLA, averaged over an epoch), 1 GPU: A100-40GB TF32
	// 808 images/s vs V100-16GB FP32 412 = 1.96x (vs V100-32GB on DGX-2, 432:
	// 1.87x). TensorFlow, as the catalog. Lambda's own pre-release estimate was
	// lower (A100 FP32/TF32 "~1.4x" V100, lambdalabs.com/blog/nvidia-a100-gpu-deep-learning-benchmarks-and-architectural-overview),
	// made before measurements.
	"a100-40g": {Name: "A100-40GB", TotalMiB: 40 << 10, CapacityMiB: 35 << 10, PCIeGBps: 24, Speed: 2.7},
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
		return Device{}, fmt.Errorf("unknown device %q: choose one of %s", name, strings.Join(Names(), ", "))
	}
	return d, nil
}

// Names are the presets' names, sorted: what --device and --emulate accept.
func Names() []string {
	var names []string
	for n := range Presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
