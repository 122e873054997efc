package workload

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Kinds of job.
const (
	Train = "train"
	Infer = "infer"
)

// Profile is what one workload (a model at a batch size, training or inference)
// needs from a GPU when it runs alone. Memory in MiB, times in seconds.
type Profile struct {
	Model string `json:"model"`
	Batch int    `json:"batch_size"`
	Kind  string `json:"kind"`
	// IterS is the standalone time of one iteration (one request, for inference).
	IterS float64 `json:"iter_s"`
	// StartupS is the fixed start-up time: process, session and graph creation.
	StartupS      float64 `json:"startup_s"`
	PeakMiB       float64 `json:"peak_mib"`
	PersistentMiB float64 `json:"persistent_mib"`
	EphemeralMiB  float64 `json:"ephemeral_mib"`
	// Demand is the fraction of the GPU's compute one iteration keeps busy alone.
	Demand float64 `json:"demand"`
	// Lengths maps a duration class (1min, 5min, 10min) to the iterations Salus ran.
	Lengths map[string]int `json:"lengths,omitempty"`
	// Estimated is true when the times were not measured but estimated.
	Estimated bool   `json:"estimated"`
	Source    Source `json:"source"`
}

// Source says where each figure of a profile came from.
type Source struct {
	Iter       string `json:"iter_s"`
	Startup    string `json:"startup_s"`
	Peak       string `json:"peak_mib"`
	Persistent string `json:"persistent_mib"`
	Ephemeral  string `json:"ephemeral_mib"`
	Demand     string `json:"demand"`
}

// Key names a profile: model, batch size and kind, e.g. "resnet50/50/train".
func (p Profile) Key() string { return Key(p.Model, p.Batch, p.Kind) }

// Key builds a profile key.
func Key(model string, batch int, kind string) string {
	return fmt.Sprintf("%s/%d/%s", model, batch, kind)
}

// StandaloneS is the time the job takes alone: start-up plus its iterations.
func (p Profile) StandaloneS(iterations int) float64 {
	return p.StartupS + float64(iterations)*p.IterS
}

// Catalog holds the profiles by key.
type Catalog struct {
	// byKey holds each profile once: the jobs of a trace point to it (Shared), and
	// nothing changes a profile once it is in.
	byKey map[string]*Profile
	keys  []string
	// Throughput is the effective GPU throughput the measured profiles show, in
	// multiply-accumulates per second of throughput-bound time (training counts
	// forward plus backward as three forward passes).
	Throughput float64
	// MinFixedS is the smallest per-iteration fixed cost among the measured models.
	MinFixedS float64
	// fromFile holds the keys of the profiles a catalog file gave (LoadCatalogFile).
	fromFile map[string]string
}

// Lookup returns the profile of model at batch size batch for kind (train if empty).
func (c *Catalog) Lookup(model string, batch int, kind string) (Profile, error) {
	p, err := c.Shared(model, batch, kind)
	if err != nil {
		return Profile{}, err
	}
	return *p, nil
}

// Shared is Lookup's profile itself, not a copy: the one every job of the model,
// batch size and kind points to (Job.Profile). It must not be changed.
func (c *Catalog) Shared(model string, batch int, kind string) (*Profile, error) {
	if kind == "" {
		kind = Train
	}
	p, ok := c.byKey[Key(model, batch, kind)]
	if ok {
		return p, nil
	}
	var batches []string
	models := map[string]bool{}
	for _, q := range c.byKey {
		models[q.Model] = true
		if q.Model == model && q.Kind == kind {
			batches = append(batches, fmt.Sprint(q.Batch))
		}
	}
	if !models[model] {
		return nil, fmt.Errorf("unknown model %q: `salus models` lists the catalog; add your own with --catalog FILE, or give iter_s, persistent_mib and ephemeral_mib in the trace", model)
	}
	if len(batches) == 0 {
		return nil, fmt.Errorf("model %q has no %s profile: `salus models` lists the catalog; add one with --catalog FILE", model, kind)
	}
	sort.Strings(batches)
	return nil, fmt.Errorf("model %q has no %s profile at batch size %d: known batch sizes are %s; add one with --catalog FILE", model, kind, batch, strings.Join(batches, ", "))
}

// Profiles returns every profile, sorted by model, kind and batch.
func (c *Catalog) Profiles() []Profile {
	out := make([]Profile, len(c.keys))
	for i, k := range c.keys {
		out[i] = *c.byKey[k]
	}
	return out
}

// Measured returns the training profiles Salus timed, in catalog order: the
// generated trace's mix. A catalog file's profile that replaced one of them stays
// in (with the figures of the file); one that added a model is not (it has no
// Lengths: Salus never ran it).
func (c *Catalog) Measured() []Profile {
	var out []Profile
	for _, p := range c.measured() {
		out = append(out, *p)
	}
	return out
}

// measured is Measured's profiles themselves, shared (see Shared).
func (c *Catalog) measured() []*Profile {
	var out []*Profile
	for _, k := range c.keys {
		if p := c.byKey[k]; p.Kind == Train && !p.Estimated && len(p.Lengths) > 0 {
			out = append(out, p)
		}
	}
	return out
}

var defaultCatalog = build()

// Default returns the catalog built from the reference measurements.
func Default() *Catalog { return defaultCatalog }

// Bytes per parameter held for the whole of a job: weights, gradient or momentum and
// framework state for training (the unit-test VGG and ResNet declarations of about
// 1.58 GiB match 12 bytes per parameter), weights alone for inference.
const (
	trainBytesPerParam = 12
	inferBytesPerParam = 4
	mib                = 1 << 20
)

// maxPersistentShare caps the persistent estimate where the parameter rule exceeds
// the measured peak.
const maxPersistentShare = 0.9

// forwardShare is the part of a training step that is the forward pass: the backward
// pass costs about twice the forward, so an inference request takes about a third of
// a training iteration at the same batch size.
const forwardShare = 1.0 / 3

// linearFit is a least-squares line t = a + c*b through a model's iteration times at
// its three batch sizes: a is the per-iteration cost that does not grow with the batch
// (launches, framework work, latency-bound kernels: the GPU is partly idle), c the
// cost per sample (throughput-bound work).
type linearFit struct{ a, c float64 }

func fit(bs, ts []float64) linearFit {
	n := float64(len(bs))
	var sb, st, sbb, sbt float64
	for i := range bs {
		sb += bs[i]
		st += ts[i]
		sbb += bs[i] * bs[i]
		sbt += bs[i] * ts[i]
	}
	c := (n*sbt - sb*st) / (n*sbb - sb*sb)
	return linearFit{a: (st - c*sb) / n, c: c}
}

// demand is the throughput-bound share of an iteration at batch b, kept in [0.05, 1]:
// a job whose time still grows slower than its batch leaves the GPU partly idle.
func (f linearFit) demand(b float64) float64 {
	t := f.a + f.c*b
	return math.Min(1, math.Max(0.05, f.c*b/t))
}

func build() *Catalog {
	c := &Catalog{byKey: map[string]*Profile{}}
	byModel := map[string][]measuredProfile{}
	var order []string
	for _, m := range measuredTraining {
		if byModel[m.model] == nil {
			order = append(order, m.model)
		}
		byModel[m.model] = append(byModel[m.model], m)
	}
	fits := map[string]linearFit{}
	var throughputs []float64
	c.MinFixedS = math.Inf(1)
	for _, model := range order {
		ms := byModel[model]
		var bs, ts []float64
		for _, m := range ms {
			bs = append(bs, float64(m.batch))
			ts = append(ts, iterTime(m))
		}
		f := fit(bs, ts)
		fits[model] = f
		throughputs = append(throughputs, 3*cnnFigures[model].gmacs*1e9/f.c)
		c.MinFixedS = math.Min(c.MinFixedS, f.a)
		for _, m := range ms {
			c.add(trainingProfile(m, f))
		}
		c.add(cnnInference(model, f, ms))
	}
	sort.Float64s(throughputs)
	c.Throughput = throughputs[len(throughputs)/2]
	for _, d := range declaredWorkloads {
		c.add(c.estimated(d))
	}
	sort.Strings(c.keys)
	return c
}

func (c *Catalog) add(p Profile) {
	if _, dup := c.byKey[p.Key()]; dup {
		panic("workload: duplicate profile " + p.Key())
	}
	c.byKey[p.Key()] = &p
	c.keys = append(c.keys, p.Key())
}

const measuredSrc = "Salus standalone runs (P100, TensorFlow 1.5)"

// iterTime is the per-iteration time from the 1 and 10 minute runs; their difference
// cancels the fixed start-up.
func iterTime(m measuredProfile) float64 {
	short, long := m.runs[0], m.runs[2]
	return (long.jctS - short.jctS) / float64(long.iters-short.iters)
}

func trainingProfile(m measuredProfile, f linearFit) Profile {
	t := iterTime(m)
	persistent := cnnFigures[m.model].paramsM * 1e6 * trainBytesPerParam / mib
	persistentSrc := fmt.Sprintf("%.1f M parameters x %d bytes (weights, gradient or momentum, framework state)", cnnFigures[m.model].paramsM, trainBytesPerParam)
	// alexnet at batch 25 peaks below 12 bytes per parameter, so TensorFlow kept less
	// than that resident; cap the floor so that some ephemeral memory remains.
	if cap := maxPersistentShare * m.peakMiB; persistent > cap {
		persistent = cap
		persistentSrc += fmt.Sprintf(", capped at %.0f%% of the measured peak, which is lower", maxPersistentShare*100)
	}
	p := Profile{
		Model: m.model, Batch: m.batch, Kind: Train,
		IterS:         t,
		StartupS:      m.runs[0].jctS - t*float64(m.runs[0].iters),
		PeakMiB:       m.peakMiB,
		PersistentMiB: persistent,
		EphemeralMiB:  m.peakMiB - persistent,
		Demand:        f.demand(float64(m.batch)),
		Lengths:       map[string]int{},
		Source: Source{
			Iter:       measuredSrc + ": (jct_10min - jct_1min) / (iters_10min - iters_1min)",
			Startup:    measuredSrc + ": jct_1min - iter_s * iters_1min",
			Peak:       measuredSrc,
			Persistent: persistentSrc,
			Ephemeral:  "peak - persistent",
			Demand:     fmt.Sprintf("line through the model's iteration times at its three batch sizes, t = %.1f ms + %.3f ms x batch; demand = per-sample part / t", f.a*1e3, f.c*1e3),
		},
	}
	for _, r := range m.runs {
		p.Lengths[r.class] = r.iters
	}
	return p
}

// cnnInference derives a batch-1 inference profile from the training fit.
func cnnInference(model string, f linearFit, ms []measuredProfile) Profile {
	fig := cnnFigures[model]
	persistentTrain := fig.paramsM * 1e6 * trainBytesPerParam / mib
	var bs, es []float64
	for _, m := range ms {
		bs = append(bs, float64(m.batch))
		es = append(es, m.peakMiB-persistentTrain)
	}
	ef := fit(bs, es)
	// One sample's activations plus the batch-independent workspace, never below one
	// sample's share: inference frees activations as it goes, so this is an upper bound.
	ephemeral := math.Max(ef.c, ef.a+ef.c)
	persistent := fig.paramsM * 1e6 * inferBytesPerParam / mib
	startup := ms[0].runs[0].jctS - iterTime(ms[0])*float64(ms[0].runs[0].iters)
	return Profile{
		Model: model, Batch: 1, Kind: Infer,
		IterS:         forwardShare * (f.a + f.c),
		StartupS:      startup,
		PeakMiB:       persistent + ephemeral,
		PersistentMiB: persistent,
		EphemeralMiB:  ephemeral,
		Demand:        f.demand(1),
		Estimated:     true,
		Source: Source{
			Iter:       "estimated: a third (the forward pass) of the training line at batch 1",
			Startup:    "the smallest batch's measured training start-up",
			Peak:       "persistent + ephemeral",
			Persistent: fmt.Sprintf("%.1f M parameters x %d bytes (weights only)", fig.paramsM, inferBytesPerParam),
			Ephemeral:  fmt.Sprintf("estimated: line through training ephemeral memory at the three batch sizes (%.0f MiB + %.1f MiB x batch), at batch 1", ef.a, ef.c),
			Demand:     "the training line's per-sample share at batch 1",
		},
	}
}

// estimated builds a profile for a workload Salus declared memory for but never
// timed. Its iteration time is the smallest fixed per-iteration cost among the
// measured models plus its multiply-accumulates at the measured effective throughput.
// Its demand is that of the measured training profile with the nearest work per
// iteration, since nothing was measured of how its time grows with the batch.
func (c *Catalog) estimated(d declared) Profile {
	passes := 3.0
	if d.kind == Infer {
		passes = 1
	}
	work := passes * d.gmacs * 1e9 * float64(d.batch)
	iter := c.MinFixedS + work/c.Throughput
	if d.kind == Infer {
		iter = forwardShare*c.MinFixedS + work/c.Throughput
	}
	nearest, nearestWork := Profile{}, math.Inf(1)
	for _, k := range c.keys {
		p := *c.byKey[k]
		if p.Kind != Train || p.Estimated {
			continue
		}
		w := 3 * cnnFigures[p.Model].gmacs * 1e9 * float64(p.Batch)
		if dist := math.Abs(math.Log(w / work)); dist < nearestWork || (dist == nearestWork && p.Key() < nearest.Key()) {
			nearest, nearestWork = p, dist
		}
	}
	minStartup := math.Inf(1)
	for _, m := range measuredTraining {
		minStartup = math.Min(minStartup, m.runs[0].jctS-iterTime(m)*float64(m.runs[0].iters))
	}
	return Profile{
		Model: d.model, Batch: d.batch, Kind: d.kind,
		IterS:         iter,
		StartupS:      minStartup,
		PeakMiB:       d.persistent + d.ephemeral,
		PersistentMiB: d.persistent,
		EphemeralMiB:  d.ephemeral,
		Demand:        nearest.Demand,
		Estimated:     true,
		Source: Source{
			Iter: fmt.Sprintf("estimated: %.1f ms (smallest fixed cost of the measured models) + %.3g GMAC (%s) at %.2f TMAC/s (median effective throughput of the measured models)",
				c.MinFixedS*1e3, work/1e9, "x"+fmt.Sprint(passes)+" passes, "+d.gmacsNote, c.Throughput/1e12),
			Startup:    "estimated: the smallest measured start-up (a small graph builds quickly)",
			Peak:       "persistent + ephemeral",
			Persistent: "Salus test workload's declaration",
			Ephemeral:  "Salus test workload's declaration",
			Demand:     "estimated: demand of the measured profile with the nearest work per iteration, " + nearest.Key(),
		},
	}
}
