package device

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The presets are the devices known by name. Each registers itself, from its own
// file (p100.go, a100.go, ...), with Register and an explicit Order, and every
// list a user reads (Names, in help texts and errors) comes from the registry in
// that order.
//
// Memory: TotalMiB is the vendor's figure for the card (GB taken as GiB, as
// nvidia-smi's memory.total comes within a few per cent of it: ECC and the
// driver's reserve take the rest). The P100 is the card of the reference
// measurements: 16 GiB, of which about 14 GiB were usable; the other cards keep
// the same share for the context and the framework (CapacityMiB is 7/8 of
// TotalMiB). PCIeGBps is the host link at the same share of nominal as the P100's
// (about 12 of PCIe 3.0 x16's 15.75 GB/s; 24 for PCIe 4.0 x16, 48 for 5.0).
//
// Speed: the catalog's profiles are FP32 TensorFlow CNN training (ResNet, VGG,
// Inception, ...) timed on a P100 in 2018, so each speed is single-GPU FP32
// training throughput of such CNNs relative to the P100, on the same software
// where the sources allow (speed-ups from newer frameworks are not the card's).
// On Ampere and newer, FP32 code gets TF32 tensor cores by default (TensorFlow
// 2.4+ for convolutions and matrix products, PyTorch for convolutions), so TF32
// figures stand for FP32 there; mixed precision (AMP, FP16, FP8) is left out, as
// the catalog's jobs do not use it. Where a ratio is estimated rather than
// measured, the comment says so. All speeds are for training-sized batches:
// batch-1 inference, bound by kernel launches, gains much less from a faster card
// (ResNet-50 TF batch 1: V100 5.8 ms, A100 5.3 ms in NVIDIA's
// DeepLearningExamples), so the inference suite's latencies on the newer cards
// are optimistic.
//
// The estimation rule, for a card no published FP32/TF32 CNN training comparison
// was found for: the speed of a measured preset of the nearest architecture (the
// anchor) times the geometric mean of the card's two peak ratios to the anchor,
// dense FP32-path throughput (TF32 tensor cores from Ampere on, FP32 CUDA cores
// before) and memory bandwidth, all from the vendor's datasheets. CNN training
// has both compute-bound layers (convolutions, matrix products) and
// bandwidth-bound ones (batch normalization, activations, the optimizer's
// updates); the two ratios bound the estimate on either side, and each comment
// gives both. Peak figures printed "with sparsity" are halved to dense.
//
// A GPU nvidia-smi names but no preset matches (its model is not here, or its
// memory or form factor is not a preset's) is never taken for another card: Match
// refuses it, and Detect describes it by its own name and memory at speed 1.

// Spec is a preset as it registers itself.
type Spec struct {
	// Key is the name --device and --emulate accept, lowercase ("a100-40g").
	Key string
	// Order is the preset's place in every list (Names): lower first. Two presets
	// may not share one.
	Order int
	// Device is the card's figures; Preset fills in the time-slicing defaults.
	Device Device
	// Model is the card's model as nvidia-smi's name writes it, lowercase: "a100"
	// matches "NVIDIA A100-SXM4-80GB" and "NVIDIA A100 80GB PCIe" (a word of the
	// name, so that "a10" does not match an A100, nor "h200" a GH200).
	Model string
	// Forms are the form factors a name may state for this preset ("pcie",
	// "sxm4"); "" accepts a name that states none. Nil means {""}. A name stating
	// a form no preset of its model lists ("H100 NVL") matches none.
	Forms []string
	// Source says in one line where the speed comes from (the comment above the
	// preset's Register says it in full). The device table of docs/concepts.md is
	// generated from it (salus gen-docs).
	Source string
	// Default makes this preset its model's when neither the name nor the caller
	// gives the memory ("A100" alone: the 80 GB card). A model with one preset
	// needs none.
	Default bool
}

var registry []Spec

// Register adds a preset. Each preset's file calls it from init; a preset without
// a Source, or a key, order or (model, memory, form) already taken, panics, as a
// programming error.
func Register(s Spec) {
	if s.Key == "" || s.Key != strings.ToLower(s.Key) || s.Model == "" || s.Model != strings.ToLower(s.Model) || !(s.Device.TotalMiB > 0) || s.Source == "" {
		panic(fmt.Sprintf("device.Register(%+v): give a lowercase key and model, the card's memory and where its speed comes from (Source)", s))
	}
	if s.Forms == nil {
		s.Forms = []string{""}
	}
	for _, o := range registry {
		if o.Key == s.Key || o.Order == s.Order {
			panic(fmt.Sprintf("device.Register(%q, order %d): %q has that key or order", s.Key, s.Order, o.Key))
		}
		if o.Model == s.Model && o.Device.TotalMiB == s.Device.TotalMiB && slices.ContainsFunc(s.Forms, func(f string) bool { return slices.Contains(o.Forms, f) }) {
			panic(fmt.Sprintf("device.Register(%q): %q is the same model, memory and form", s.Key, o.Key))
		}
		if o.Model == s.Model && o.Default && s.Default {
			panic(fmt.Sprintf("device.Register(%q): %q is already model %s's default", s.Key, o.Key, s.Model))
		}
	}
	i, _ := slices.BinarySearchFunc(registry, s.Order, func(o Spec, order int) int { return o.Order - order })
	registry = slices.Insert(registry, i, s)
}

// Specs are the registered presets, in their order.
func Specs() []Spec { return slices.Clone(registry) }

// Time-slicing defaults, shared by every preset.
const (
	defaultSliceS         = 2e-3
	defaultContextSwitchS = 50e-6
)

// DefaultDevice is the P100 of the reference measurements.
func DefaultDevice() Device { d, _ := Preset("p100"); return d }

// Preset returns a named device: by its key ("a100-40g"), or by the device's own
// Name, as event logs write it ("A100-40GB"), in any case.
func Preset(name string) (Device, error) {
	i := slices.IndexFunc(registry, func(s Spec) bool { return strings.EqualFold(s.Key, name) })
	if i < 0 {
		i = slices.IndexFunc(registry, func(s Spec) bool { return strings.EqualFold(s.Device.Name, name) })
	}
	if i < 0 {
		return Device{}, fmt.Errorf("unknown device %q: choose one of %s", name, strings.Join(Names(), ", "))
	}
	d := registry[i].Device
	d.SliceS, d.ContextSwitchS = defaultSliceS, defaultContextSwitchS
	return d, nil
}

// Names are the presets' keys, in their order: what --device and --emulate accept.
func Names() []string {
	names := make([]string, len(registry))
	for i, s := range registry {
		names[i] = s.Key
	}
	return names
}

// Models are the models the presets match, in the presets' order, once each.
func Models() []string {
	var models []string
	for _, s := range registry {
		if !slices.Contains(models, s.Model) {
			models = append(models, s.Model)
		}
	}
	return models
}

// memoryTolerance is how far a GPU's memory may be from a preset's TotalMiB and
// still be that card: nvidia-smi reports 6.25% less than the nominal memory on the
// GDDR6 cards with ECC on (a T4's 15360 of 16384 MiB), and GB are taken as GiB.
const memoryTolerance = 0.10

var (
	wordRE   = regexp.MustCompile(`[a-z0-9]+`)
	gbRE     = regexp.MustCompile(`^([0-9]+)gb$`)
	traceMem = regexp.MustCompile(`^m([0-9]+)$`) // "V100M32": a cluster trace's model and GB
	// forms are the form-factor words a name may carry.
	forms = []string{"pcie", "sxm", "sxm2", "sxm3", "sxm4", "sxm5", "nvl", "fhhl"}
)

// Match returns the key of the preset of a GPU named as nvidia-smi names it
// ("NVIDIA A100 80GB PCIe", "Tesla T4") or as a cluster trace does ("A100",
// "V100M32"), with memMiB its memory when the caller knows it (nvidia-smi's
// memory.total, in MiB; 0: unknown). The name's model must be a preset's (a word
// of the name); then its form factor, where it states one ("PCIE", "SXM4"), one
// of that preset's; then its memory, the name's own ("80GB") or else memMiB,
// within 10% of the preset's (the model's default preset when neither gives one).
// A name no preset matches is an error that says why and lists the models known:
// never another card.
func Match(name string, memMiB float64) (string, error) {
	words := wordRE.FindAllString(strings.ToLower(name), -1)
	model, form, statedMiB := "", "", 0.0
	for _, w := range words {
		if m := gbRE.FindStringSubmatch(w); m != nil {
			gb, _ := strconv.Atoi(m[1])
			statedMiB = float64(gb) * 1024
			continue
		}
		if slices.Contains(forms, w) {
			form = w
			continue
		}
		if model != "" {
			continue
		}
		for _, s := range registry {
			if w == s.Model {
				model = w
			} else if rest, ok := strings.CutPrefix(w, s.Model); ok {
				if m := traceMem.FindStringSubmatch(rest); m != nil {
					gb, _ := strconv.Atoi(m[1])
					model, statedMiB = s.Model, float64(gb)*1024
				}
			}
		}
	}
	if model == "" {
		return "", fmt.Errorf("GPU %q is no model the device presets know (%s)", name, strings.Join(Models(), ", "))
	}
	var cands []Spec
	for _, s := range registry {
		if s.Model == model && slices.Contains(s.Forms, form) {
			cands = append(cands, s)
		}
	}
	if len(cands) == 0 {
		return "", fmt.Errorf("GPU %q: no %s preset is of the form %q (%s)", name, strings.ToUpper(model), form, describeModel(model))
	}
	mem := statedMiB
	if mem == 0 {
		mem = memMiB
	}
	if mem > 0 {
		best, bestOff := "", math.Inf(1)
		for _, s := range cands {
			if off := math.Abs(mem/s.Device.TotalMiB - 1); off <= memoryTolerance && off < bestOff {
				best, bestOff = s.Key, off
			}
		}
		if best == "" {
			return "", fmt.Errorf("GPU %q with %.0f MiB: no %s preset has that memory (%s)", name, mem, strings.ToUpper(model), describeModel(model))
		}
		return best, nil
	}
	if len(cands) == 1 {
		return cands[0].Key, nil
	}
	for _, s := range cands {
		if s.Default {
			return s.Key, nil
		}
	}
	return "", fmt.Errorf("GPU %q: give its memory to choose between the %s presets (%s)", name, strings.ToUpper(model), describeModel(model))
}

// describeModel lists a model's presets: key, memory and forms.
func describeModel(model string) string {
	var out []string
	for _, s := range registry {
		if s.Model != model {
			continue
		}
		var fs []string
		for _, f := range s.Forms {
			if f != "" {
				fs = append(fs, strings.ToUpper(f))
			}
		}
		d := fmt.Sprintf("%s: %.0f GiB", s.Key, s.Device.TotalMiB/1024)
		if len(fs) > 0 {
			d += " " + strings.Join(fs, "/")
		}
		out = append(out, d)
	}
	return strings.Join(out, "; ")
}

// Detect is the device of a GPU as nvidia-smi reports it (--query-gpu=name,memory.total):
// the preset Match finds, or, when none matches, a device named by nvidia-smi's
// name with memMiB of memory (7/8 of it usable, as the presets; 0: the P100's),
// speed 1 and the P100's figures for the rest, together with Match's error for the caller
// to warn with: the device is then unknown, and its speed is not the card's.
func Detect(name string, memMiB float64) (Device, error) {
	key, err := Match(name, memMiB)
	if err == nil {
		return Preset(key)
	}
	d := DefaultDevice()
	d.Name = strings.TrimSpace(name)
	if memMiB > 0 {
		d.TotalMiB, d.CapacityMiB = memMiB, memMiB*7/8
	}
	return d, fmt.Errorf("%w: taken as %q, %.0f MiB usable, at speed 1 (its speed is unknown: iterations are taken at their P100 times)", err, d.Name, d.CapacityMiB)
}
