package sweep

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/salusgo/salus/bound"
	"github.com/salusgo/salus/cluster"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/interference"
	"github.com/salusgo/salus/workload"
)

// DefaultMode runs each policy in its own sharing mode.
const DefaultMode = "default"

// The values of Grid.Migrations.
const (
	MigrateOff = "off"
	MigrateOn  = "on"
)

// Metrics are the names of the metrics a simulated run reports, in table order.
var Metrics = []string{"avg_jct_s", "p95_jct_s", "makespan_s", "avg_queuing_s", "gpu_busy", "jain_slowdown", "max_slowdown",
	"avg_jct_vs_bound", "makespan_vs_bound"}

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

// mayMigrate says whether migration can act on policy under mode
// (core.Policy.MayMigrate).
func mayMigrate(policy, mode string) bool {
	p, err := core.Compose(mode, policy, core.DefaultModeParams())
	return err == nil && p.MayMigrate()
}

// Applicable reports whether a policy runs in a mode, and the mode's name
// ("default" becomes the policy's own mode).
func Applicable(policy, mode string) (string, bool) {
	s, err := resolve(policy, mode)
	return s.Mode, err == nil
}

// Check reports unknown policies and devices, unreadable trace files, an unknown
// resampling method, and seeds that would all run the same trace (modes that fit
// no policy are found by Cells).
func Check(g Grid) error {
	for _, p := range g.Policies {
		if _, err := core.Lookup(p); err != nil {
			return err
		}
	}
	// The core checks the admission orders and the starve factor (one check).
	if err := (core.ModeParams{StarveFactor: g.StarveFactor}).Validate(); err != nil {
		return err
	}
	for _, a := range g.Admissions {
		if a == "" {
			return fmt.Errorf("admission \"\": choose %s", strings.Join(core.AdmissionOrders, " or "))
		}
		if err := (core.ModeParams{Admission: a}).Validate(); err != nil {
			return err
		}
	}
	for _, m := range g.Migrations {
		if m != MigrateOff && m != MigrateOn {
			return fmt.Errorf("--migrate %q: choose %s or %s (both: compare them)", m, MigrateOff, MigrateOn)
		}
	}
	if _, err := device.Preset(g.Device); err != nil {
		return err
	}
	if g.GPUs < 0 || g.GPUs > 1<<16 {
		return fmt.Errorf("--gpus %d: a node has 1 to 65536 GPUs", g.GPUs)
	}
	if g.Cluster != "" {
		if _, err := cluster.Load(g.Cluster); err != nil {
			return err
		}
	}
	if _, err := core.LookupNodePlacement(g.NodePlacement); err != nil {
		return err
	}
	cat, err := Catalog(g)
	if err != nil {
		return err
	}
	for _, l := range g.Loads {
		if !(l > 0) || math.IsInf(l, 0) {
			return fmt.Errorf("load %v: give positive arrival-rate multipliers (2: the jobs arrive twice as fast)", l)
		}
	}
	for _, k := range g.TraceKinds {
		if !slices.Contains(workload.Kinds(), k) {
			return fmt.Errorf("unknown trace kind %q: choose %s (salus trace gen --kind)", k, strings.Join(workload.Kinds(), ", "))
		}
	}
	if len(g.Traces) == 0 {
		if g.Resample != "" {
			return fmt.Errorf("resampling (%s) draws from trace files, and there are none: each seed of the generated trace is a new trace already", g.Resample)
		}
		return nil
	}
	if !slices.Contains(workload.ResampleMethods, g.Resample) {
		return fmt.Errorf("unknown resampling method %q: choose %s", g.Resample, strings.Join(workload.ResampleMethods, ", "))
	}
	if g.Resample == workload.ResampleNone && len(g.Seeds) > 1 {
		return fmt.Errorf("%d seeds without resampling run each trace file %d times alike, and the intervals would be zero: resample (bootstrap or jitter) or run one seed", len(g.Seeds), len(g.Seeds))
	}
	for _, path := range g.Traces {
		if _, err := workload.ReadTraceFile(path, cat); err != nil {
			return err
		}
	}
	return nil
}

// GPUsLabel is the GPUs of each run, as the tables show them: how many GPUs
// the node has, or the cluster file's name and its GPUs.
func (g Grid) GPUsLabel() string {
	if g.Cluster == "" {
		return fmt.Sprint(max(1, g.GPUs))
	}
	name := filepath.Base(g.Cluster)
	if cl, err := cluster.Load(g.Cluster); err == nil {
		n := 0
		for _, node := range cl.Nodes {
			n += max(1, node.GPUs())
		}
		return fmt.Sprintf("%s (%d)", name, n)
	}
	return name
}

// SeveralGPUs says whether each run has more than one GPU: the tables then
// show the least and the most busy GPU (PerGPUColumns).
func (g Grid) SeveralGPUs() bool { return g.GPUs > 1 || g.Cluster != "" }

// PerGPUColumns are the metrics of a run on several GPUs beside those of
// Metrics: the busy fraction of its least and its most busy GPU.
var PerGPUColumns = []string{"gpu_busy_min", "gpu_busy_max"}

// BusyPerGPU is a cell's least and most busy GPU, as the tables show it
// ("57-86": percent of the makespan, the means over the seeds); "-" when the
// runs had one GPU.
func (c Summary) BusyPerGPU() string {
	lo, hi := c.Metrics["gpu_busy_min"], c.Metrics["gpu_busy_max"]
	if lo.N == 0 || hi.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f-%.0f", 100*lo.Mean, 100*hi.Mean)
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

// TraceName is how a trace file is named in tables and plots: its file name
// without the extension ("salus100" for the generated trace, path "").
func TraceName(path string) string {
	if path == "" {
		return workload.Salus100
	}
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}

// SimRunner runs a cell in the simulator, on the grid's device with the cell's
// capacity, through eval.Simulate (the same code path as salus eval): on the
// generated trace of the cell's kind and the grid's size at the cell's load and
// seed (as salus trace gen --kind KIND --seed SEED --load LOAD makes it), or on
// the cell's trace file resampled by the grid's method with the seed and its
// arrivals scaled by the load. Each file is read once.
func SimRunner(g Grid) Runner {
	cat, catErr := Catalog(g)
	var mu sync.Mutex
	files := map[string]*workload.Trace{}
	read := func(path string) (*workload.Trace, error) {
		mu.Lock()
		defer mu.Unlock()
		if t, ok := files[path]; ok {
			return t, nil
		}
		t, err := workload.ReadTraceFile(path, cat)
		if err == nil {
			files[path] = t
		}
		return t, err
	}
	coLocation, imErr := interference.Named(g.Interference)
	var cl eval.Cluster
	var clErr error
	if g.Cluster != "" {
		cl.Nodes, clErr = cluster.Load(g.Cluster)
		cl.Placement = g.NodePlacement
	}
	return func(c Cell, seed int64) (map[string]float64, error) {
		if catErr != nil {
			return nil, catErr
		}
		if clErr != nil {
			return nil, clErr
		}
		if imErr != nil {
			return nil, imErr
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
		if coLocation != nil {
			dev.CoLocation, dev.CoLocationName = coLocation, g.Interference
		}
		var t *workload.Trace
		if c.Trace == "" {
			t, err = generated(g, cat, c.Kind, seed, c.Load)
		} else {
			t, err = fileTrace(read, c, g.Resample, seed)
		}
		if err != nil {
			return nil, err
		}
		mp := core.DefaultModeParams()
		mp.Admission, mp.StarveFactor, mp.Migrate = c.Admission, g.StarveFactor, c.Migrate
		r, err := eval.SimulateOpts(t, s, mp, dev, eval.SimOptions{Cluster: cl})
		if err != nil {
			return nil, err
		}
		m := map[string]float64{"avg_jct_s": r.AvgJCTS, "p95_jct_s": r.P95JCTS, "makespan_s": r.MakespanS,
			"avg_queuing_s": r.AvgQueuingS, "gpu_busy": r.GPUBusy}
		if lo, hi, ok := r.BusyRange(); ok {
			m["gpu_busy_min"], m["gpu_busy_max"] = lo, hi
		}
		if r.JainSlowdown > 0 {
			m["jain_slowdown"], m["max_slowdown"] = r.JainSlowdown, r.MaxSlowdown
		}
		// The run's ratios to the lower bounds of its trace (package bound), on
		// one node only.
		if b, err := bound.Of(t, dev); err == nil && cl.Nodes == nil {
			m["avg_jct_vs_bound"], m["makespan_vs_bound"] = bound.Ratio(r.AvgJCTS, b.AvgJCTS), bound.Ratio(r.MakespanS, b.MakespanS)
		}
		return m, nil
	}
}

// fileTrace is the cell's trace file, resampled with the seed and scaled to the
// cell's load; the file's own trace is left as it was read.
func fileTrace(read func(string) (*workload.Trace, error), c Cell, method string, seed int64) (*workload.Trace, error) {
	orig, err := read(c.Trace)
	if err != nil {
		return nil, err
	}
	t, err := orig.Resample(method, seed)
	if err != nil {
		return nil, err
	}
	if err := t.ScaleLoad(c.Load); err != nil {
		return nil, fmt.Errorf("%s: %w", c.Trace, err)
	}
	return t, nil
}
