package main

// The flag groups of salus's commands, each defined once here and attached (with
// its register method) only to the commands where it takes effect:
//
//	traceFlags   --trace FILE, --seed, --load,
//	             --resample                           eval, simulate; replay (--trace, --load); trace stats (--seed, --load)
//	             --catalog FILE (repeatable)          eval, simulate, replay; trace stats, validate,
//	                                                  from-log; models, serve
//	deviceFlags  --device, --capacity-mib, the device
//	             model and the modes' parameters      eval, simulate, replay
//	schemeFlags  --policy, --mode: lists              eval, sweep, replay
//	policyFlag   --policy, --mode: one of each        simulate (serve: --policy)
//	addPolicyFileFlag --policy-file FILE (repeatable) with --policy everywhere (policies.go)
//	outputFlags  --format/-o FORMAT                   every command that prints results
//	addOutFlag   --out DIR (or FILE)                  eval, sweep, replay (DIR); trace gen, trace import (FILE)
//	addGPUsFlag  --gpus: a count (serve: device indices too) eval, simulate, replay, sweep, serve (gpus.go)
//	engines'     (engine.Flagged) the live engine's
//	own flags    --time-scale, --server, --server-log eval, replay (addEngineFlags)
//	suites'      (eval.Flagged) --tuning-jobs,
//	own flags    --requests, the overhead suite's     eval (addSuiteFlags)
//	modes'       (core.Mode.Params) --context-mib,
//	parameters   --mps-clients, --suspend-quantum...  with deviceFlags
//
// Conventions: --format (short -o) is the printing format everywhere but trace
// import, where it is the format of the source trace read (the trace written is
// --output-format, without a shorthand); --out is where results are written (a
// directory, or trace gen's and trace import's file); --events FILE is an event
// log (simulate, serve). A flag given where it does nothing is an error that
// names it (applies.go); groups that never act on a command are not attached to it.

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/workload"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// addPresetFlag is --device, the device preset, for every command that takes one.
func addPresetFlag(f *pflag.FlagSet, p *string, what string) {
	f.StringVar(p, "device", "p100", what+": "+strings.Join(device.Names(), ", "))
}

// addCapacityFlag is --capacity-mib, one capacity overriding the preset's.
func addCapacityFlag(f *pflag.FlagSet, p *float64) {
	f.Float64Var(p, "capacity-mib", 0, "usable device memory in MiB (default: the preset's)")
}

// addOutFlag is --out: the directory (or, for trace gen, the file) results are written to.
func addOutFlag(f *pflag.FlagSet, p *string, def, what string) {
	f.StringVar(p, "out", def, what)
}

// deprecatedAlias adds a hidden, deprecated --old (with shorthand short, when not
// empty) that sets the same variable as --use, so that existing scripts keep working.
func deprecatedAlias(f *pflag.FlagSet, p *string, old, short, use string) {
	f.StringVarP(p, old, short, f.Lookup(use).DefValue, "deprecated: use --"+use)
	_ = f.MarkDeprecated(old, "use --"+use)
}

// deprecatedFlag adds a hidden, deprecated --name that still sets p, with how to
// do without it.
func deprecatedFlag(f *pflag.FlagSet, p *string, name, instead string) {
	f.StringVar(p, name, "", "deprecated: "+instead)
	_ = f.MarkDeprecated(name, instead)
}

// maxGPUs bounds --gpus: more than a node, but a simulated one can be large (an
// idle GPU costs the simulator a few hundred bytes and no time per event beyond
// a scan); 65536 is what an event log's readers take.
const maxGPUs = 1 << 16

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
	gpus         string // --gpus: a count (gpuCount)
	gpuPlacement string
	startupWork  bool
	interference string
	modes        core.ModeParams
	// params are the modes' own parameters (core.Params), by name: one flag each.
	params map[string]*float64
	ints   map[string]*int
}

func (d *deviceFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	addPresetFlag(f, &d.preset, "device preset")
	addCapacityFlag(f, &d.capacityMiB)
	f.Float64Var(&d.iterOverhead, "iter-overhead", 0, "scheduling overhead added to every iteration, seconds")
	f.Float64Var(&d.switchCost, "switch-cost", 0, "cost of switching jobs in a lane at an iteration boundary, seconds")
	f.Float64Var(&d.slice, "slice", 0, "time-slicing: slice length, seconds (default 0.002)")
	f.Float64Var(&d.ctxSwitch, "context-switch", 0, "time-slicing: context switch cost per slice, seconds (default 0.00005)")
	f.Float64Var(&d.pcie, "pcie-gbps", 0, "suspend/resume: host-device copy bandwidth, GB/s (default: the preset's)")
	addGPUsFlag(f, &d.gpus, false, "")
	f.StringVar(&d.gpuPlacement, "gpu-placement", core.DefaultGPUPlacement, gpuPlacementHelp())
	f.BoolVar(&d.startupWork, "startup-on-gpu", false, "a job's start-up is GPU work its first iteration carries (TensorFlow 1.x under Salus: the first session.run autotunes cuDNN on the GPU), not time off the GPU that overlaps other jobs")
	addInterferenceFlag(f, &d.interference)
	f.Float64Var(&d.speed, "speed", 0, "compute speed relative to the P100 the profiles were measured on: iterations take P100 time / speed; start-up is not scaled (default 0: the preset's)")
	// Each mode's parameters, as the mode declares them (core.Mode.Params).
	d.params, d.ints = map[string]*float64{}, map[string]*int{}
	for _, p := range core.Params() {
		if p.Int {
			d.ints[p.Name] = f.Int(p.Name, int(p.Default), p.Help)
		} else {
			d.params[p.Name] = f.Float64(p.Name, p.Default, p.Help)
		}
	}
	addAdmissionFlags(f, &d.modes)
}

// addAdmissionFlags are --admission and --starve-factor: the order in which
// waiting jobs are admitted (simulate, eval, replay, serve; sweep has its own
// list). checkAdmission checks them.
func addAdmissionFlags(f *pflag.FlagSet, mp *core.ModeParams) {
	f.StringVar(&mp.Admission, "admission", core.AdmitByArrival, "order of admission of the jobs waiting for memory: arrival, or policy (the lane policy's: srtf shortest first, fair least attained; mps and timeslice keep arrival), under the bound of --starve-factor")
	f.Float64Var(&mp.StarveFactor, "starve-factor", core.DefaultStarveFactor, "with --admission policy: K; a job may be passed over by later arrivals only during its first K x its declared GPU time of waiting")
	f.BoolVar(&mp.Migrate, "migrate", false, "on several GPUs, a job waiting for its turn in a lane moves to a GPU of its node on which nothing runs, at its iteration boundary, paying the copy of its persistent memory over the host link (simulator only)")
}

// checkAdmission checks --admission and --starve-factor and puts them as the core
// reads them: arrival order is the empty default, so that the reports of runs
// without the option read as before.
//
// The values are checked by the core (core.ModeParams.Validate), once; here only
// what is the flags' own: --starve-factor does nothing under arrival order, and
// 0, which the core reads as its default, is not a factor one gives.
func checkAdmission(mp *core.ModeParams) error {
	if err := flagError(mp.Validate()); err != nil {
		return err
	}
	switch mp.Admission {
	case core.AdmitByArrival, "":
		if mp.StarveFactor != core.DefaultStarveFactor && mp.StarveFactor != 0 {
			return fmt.Errorf("--starve-factor %v applies to --admission policy only: add --admission policy, or drop it", mp.StarveFactor)
		}
		mp.Admission, mp.StarveFactor = "", 0
	default:
		if mp.StarveFactor == 0 {
			return fmt.Errorf("--starve-factor 0: give a positive number of job lengths (default %g)", core.DefaultStarveFactor)
		}
	}
	return nil
}

// flagError names the flag of a mode parameter the core refused.
func flagError(err error) error {
	var pe *core.ParamError
	if !errors.As(err, &pe) {
		return err
	}
	name := "--" + strings.ReplaceAll(pe.Param, "_", "-")
	if s, ok := pe.Value.(string); ok {
		return fmt.Errorf("%s %q: %s", name, s, pe.Reason)
	}
	return fmt.Errorf("%s %v: %s", name, pe.Value, pe.Reason)
}

// checkModes refuses a mode's parameter when none of the modes that run is that
// mode: it would change nothing.
func (d *deviceFlags) checkModes(fs *pflag.FlagSet, running []string) error {
	for _, mode := range core.ModeNames() {
		if slices.Contains(running, mode) {
			continue
		}
		m, _ := core.LookupMode(mode)
		names := slices.Clone(m.DeviceParams)
		for _, p := range m.Params {
			names = append(names, p.Name)
		}
		for _, name := range names {
			if changed(fs, name) {
				return fmt.Errorf("--%s applies to the %s mode only, and none of the runs uses it (modes here: %s): drop it",
					name, mode, strings.Join(running, ", "))
			}
		}
	}
	return nil
}

func changed(fs *pflag.FlagSet, name string) bool { return fs.Lookup(name) != nil && fs.Changed(name) }

func (d *deviceFlags) device() (device.Device, error) {
	dev, err := device.Preset(d.preset)
	if err != nil {
		return dev, err
	}
	if d.speed < 0 {
		return dev, fmt.Errorf("--speed %v: give a positive speed relative to the P100, or 0 for the preset's", d.speed)
	}
	gpus, err := gpuCount(d.gpus)
	if err != nil {
		return dev, err
	}
	if _, err := core.LookupGPUPlacement(d.gpuPlacement); err != nil {
		return dev, fmt.Errorf("--gpu-placement: %w", err)
	}
	if gpus > 1 {
		dev.GPUs = gpus
	}
	if d.gpuPlacement != core.DefaultGPUPlacement {
		dev.GPUPlacement = d.gpuPlacement
	}
	dev.StartupIsGPUWork = d.startupWork
	if dev.CoLocation, err = loadInterference(d.interference); err != nil {
		return dev, err
	}
	if dev.CoLocation != nil {
		dev.CoLocationName = d.interference
		if d.slice != 0 || d.ctxSwitch != 0 {
			return dev, fmt.Errorf("--slice and --context-switch are today's rule's model of time-slicing (give --interference rule too): under the co-location model %s the measured pairs include the driver's slices and switches", d.interference)
		}
	}
	type param struct {
		name string
		v    float64
	}
	ps := []param{{"capacity-mib", d.capacityMiB}, {"iter-overhead", d.iterOverhead}, {"switch-cost", d.switchCost}, {"slice", d.slice},
		{"context-switch", d.ctxSwitch}, {"pcie-gbps", d.pcie}}
	for _, p := range core.Params() {
		if p.Int {
			ps = append(ps, param{p.Name, float64(*d.ints[p.Name])})
		} else {
			ps = append(ps, param{p.Name, *d.params[p.Name]})
		}
	}
	for _, p := range ps {
		if p.v < 0 {
			return dev, fmt.Errorf("--%s %v: device and mode parameters must not be negative", p.name, p.v)
		}
	}
	// The modes' parameters; one given as 0 means none: left 0 in
	// core.ModeParams it would mean the default.
	for _, p := range ps[6:] {
		v := p.v
		if v == 0 {
			v = -1
		}
		if err := d.modes.SetParam(p.name, v); err != nil {
			return dev, err
		}
	}
	if err := checkAdmission(&d.modes); err != nil {
		return dev, err
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

// kindsHelp lists the generator's trace kinds for a help text.
func kindsHelp() string {
	return workload.Paper + " (the paper's description: Philly-shaped lengths, 49-min arrival window; see docs/evaluation.md) or " +
		workload.Salus100 + " (the earlier stand-in: 1, 5 or 10 min jobs, Poisson arrivals at load 1)"
}

// traceFlags choose a trace: a file, or a generated one (--trace-kind); the catalog its
// models are looked up in; and, for what-if runs on a file, its arrival rate
// (--load) and a resampled version (--resample with --seed).
type traceFlags struct {
	file     string
	kind     string
	seed     int64
	load     float64
	catalogs []string
	resample string
}

func (t *traceFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&t.file, "trace", "", "trace file (CSV with a header, or JSON Lines); default: the generated trace of --trace-kind")
	t.registerGenerator(cmd)
	addCatalogFlag(cmd, &t.catalogs)
	cmd.Flags().StringVar(&t.resample, "resample", "", "with --trace and --seed: run a trace drawn from the file ("+strings.Join(workload.ResampleMethods, ", ")+"; see docs/traces.md)")
}

// addCatalogFlag is --catalog FILE, repeatable: catalog files of one's own models.
func addCatalogFlag(cmd *cobra.Command, p *[]string) {
	cmd.Flags().StringArrayVar(p, "catalog", nil, "catalog file (YAML or JSON) adding or overriding model profiles; repeatable, later files win (schema: docs/traces.md, \"Your own models\")")
}

// loadCatalog is the default catalog with the files' profiles over it, in order.
func loadCatalog(files []string) (*workload.Catalog, error) {
	cat := workload.Default()
	for _, f := range files {
		var err error
		if cat, err = workload.LoadCatalogFile(f, cat); err != nil {
			return nil, fmt.Errorf("--catalog: %w", err)
		}
	}
	return cat, nil
}

// catalog is the catalog the trace's models are looked up in.
func (t *traceFlags) catalog() (*workload.Catalog, error) { return loadCatalog(t.catalogs) }

// registerGenerator attaches the generated trace's flags only, for a command that
// takes the file as an argument (trace stats).
func (t *traceFlags) registerGenerator(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Int64Var(&t.seed, "seed", 1, "seed of the generated trace (with a trace file: of --resample)")
	f.StringVar(&t.kind, "trace-kind", workload.Paper, "kind of the generated trace: "+kindsHelp())
	t.registerLoad(cmd)
}

// registerLoad attaches --load alone, for a command that reads trace files only (replay).
func (t *traceFlags) registerLoad(cmd *cobra.Command) {
	cmd.Flags().Float64Var(&t.load, "load", 1, "arrival-rate multiplier: of the generated trace, or a trace file's arrival times are divided by it (2: twice as fast)")
}

// check refuses --seed beside a trace file, which it does not change unless the
// file is resampled, and --resample without a file.
func (t *traceFlags) check(fs *pflag.FlagSet) error {
	resampled := t.resample != "" && t.resample != workload.ResampleNone
	switch {
	case t.file == "" && changed(fs, "resample"):
		return fmt.Errorf("--resample draws from a trace file: give --trace FILE, or drop it (--seed alone draws another generated trace)")
	case t.file != "" && changed(fs, "seed") && !resampled && fs.Lookup("resample") == nil:
		return fmt.Errorf("--seed shapes the generated trace; it does nothing to the trace file %s: drop it", t.file)
	case t.file != "" && changed(fs, "seed") && !resampled:
		return fmt.Errorf("--seed shapes the generated trace; it does nothing to the trace file %s unless it is resampled: add --resample bootstrap or jitter, or drop it", t.file)
	case t.file != "" && changed(fs, "trace-kind"):
		return fmt.Errorf("--trace-kind chooses the generated trace; it does nothing to the trace file %s: drop it", t.file)
	case t.file == "" && !(t.load > 0):
		return fmt.Errorf("--load %v: give a positive arrival-rate multiplier (2: twice as fast)", t.load)
	case t.file != "" && changed(fs, "load") && !(t.load > 0):
		return fmt.Errorf("--load %v: give a positive factor (2 makes the jobs of %s arrive twice as fast)", t.load, t.file)
	}
	return nil
}

func (t *traceFlags) trace() (*workload.Trace, error) {
	cat, err := t.catalog()
	if err != nil {
		return nil, err
	}
	if t.file != "" {
		return workload.ReadTraceFile(t.file, cat)
	}
	tr, err := workload.Generate(cat, workload.GenOptions{Kind: t.kind, Seed: t.seed, Load: t.load})
	if err != nil {
		return nil, fmt.Errorf("--trace-kind %s --seed %d --load %g: %w", t.kind, t.seed, t.load, err)
	}
	return tr, nil
}

// traceFor is trace with the what-if changes to a trace file applied (--load,
// --resample), each said in a line on stderr.
func (t *traceFlags) traceFor(stderr io.Writer) (*workload.Trace, error) {
	tr, err := t.trace()
	if err != nil || t.file == "" {
		return tr, err
	}
	if stderr == nil {
		stderr = io.Discard
	}
	if t.resample != "" && t.resample != workload.ResampleNone {
		if tr, err = tr.Resample(t.resample, t.seed); err != nil {
			return nil, fmt.Errorf("--resample: %w", err)
		}
		fmt.Fprintf(stderr, "salus: %s: running a %s resample of the trace (seed %d), not the file as it is\n", t.file, t.resample, t.seed)
	}
	if t.load != 1 {
		if err := tr.ScaleLoad(t.load); err != nil {
			return nil, fmt.Errorf("--load: %w", err)
		}
		fmt.Fprintf(stderr, "salus: %s: arrival times divided by %g (--load %g): the jobs arrive %gx as fast as in the file\n", t.file, t.load, t.load, t.load)
	}
	return tr, nil
}

// schemeFlags are --policy and --mode of a command that runs several schemes: both
// lists, comma-separated or repeated.
type schemeFlags struct {
	policies []string
	modes    []string
}

// register attaches --policy and --mode; defPolicies and defModes are their
// defaults (nil: the command's own, said in the help's what).
func (s *schemeFlags) register(cmd *cobra.Command, defPolicies, defModes []string, policyHelp, modeHelp string) {
	f := cmd.Flags()
	f.StringSliceVar(&s.policies, "policy", defPolicies, "policies to run, comma-separated or repeated ("+strings.Join(core.Names(), ", ")+")"+policyHelp)
	f.StringSliceVar(&s.modes, "mode", defModes, "sharing modes, comma-separated or repeated ("+modeNames()+")"+modeHelp)
	addPolicyFileFlag(f)
}

func modeNames() string { return strings.Join(core.ModeNames(), ", ") }

// policyFlag is --policy and --mode of a command that runs one policy.
type policyFlag struct {
	policy string
	mode   string
}

func (p *policyFlag) register(cmd *cobra.Command, withMode bool) {
	f := cmd.Flags()
	f.StringVar(&p.policy, "policy", "pack", "the one policy to run ("+strings.Join(core.Names(), ", ")+"); salus eval and sweep run several")
	addPolicyFileFlag(f)
	if withMode {
		f.StringVar(&p.mode, "mode", "", "the one sharing mode (default: the policy's own): "+modeNames())
	}
}

// lookup resolves the one policy, and says so when given a list.
func (p *policyFlag) lookup(cmd string) (core.Policy, error) {
	return p.lookupWith(cmd, core.DefaultModeParams())
}

// lookupWith is lookup, the policy run in its own mode with the parameters mp.
func (p *policyFlag) lookupWith(cmd string, mp core.ModeParams) (core.Policy, error) {
	if strings.Contains(p.policy, ",") {
		return core.Policy{}, fmt.Errorf("--policy %s: salus %s runs one policy (salus eval --policy %s runs several)", p.policy, cmd, p.policy)
	}
	return core.Compose("", p.policy, mp)
}

// outputFlags are --format (short -o): how a command prints its results.
type outputFlags struct {
	format  string
	formats []string
}

// register attaches --format, whose default is formats[0]; short is its
// shorthand ("o", or "" where -o means something else).
func (o *outputFlags) register(cmd *cobra.Command, short string, formats ...string) {
	o.formats = formats
	cmd.Flags().StringVarP(&o.format, "format", short, formats[0], "output format: "+strings.Join(formats, ", "))
}

func (o *outputFlags) check() error { return checkFormat(o.format, o.formats...) }
