package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/salusgo/salus/engine"
	"github.com/salusgo/salus/eval"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagRule says where a flag of salus eval takes effect, and what to say when it
// is given elsewhere (%s: the flag's name).
type flagRule struct {
	flags   []string
	applies func(ef *evalFlags) bool
	refusal string
}

// overheadFlagNames are the flags only the overhead suite reads (overhead.go).
var overheadFlagNames = []string{"worker", "python", "examples", "models", "iterations", "block", "warmup", "reps", "threads", "torch-device", "no-trace"}

func suiteIn(ef *evalFlags, suites ...string) bool { return slices.Contains(suites, ef.suite) }

var evalFlagRules = []flagRule{
	{[]string{"trace", "catalog"}, func(ef *evalFlags) bool { return suiteIn(ef, "training", "all") },
		"--%s applies to the training suite (and all) only"},
	{[]string{"load"}, func(ef *evalFlags) bool { return suiteIn(ef, "training", "all") },
		"--%s scales the arrival rate of the training suite's trace"},
	{[]string{"seed"}, func(ef *evalFlags) bool {
		return ((ef.tf.file == "" || ef.tf.resample != "" && ef.tf.resample != "none") && suiteIn(ef, "training", "all")) || suiteIn(ef, "inference", "all")
	}, "--%s draws the generated trace of the training suite (and the inference suite's pauses); it does nothing to a --trace file unless --resample draws from it"},
	{[]string{"trace-kind"}, func(ef *evalFlags) bool { return ef.tf.file == "" && suiteIn(ef, "training", "all") },
		"--%s chooses the training suite's generated trace; it does nothing to a --trace file"},
	{[]string{"resample"}, func(ef *evalFlags) bool { return ef.tf.file != "" && suiteIn(ef, "training", "all") },
		"--%s draws a trace from the training suite's --trace file"},
	{[]string{"tuning-jobs", "tuning-iterations"}, func(ef *evalFlags) bool { return suiteIn(ef, "tuning", "all") },
		"--%s applies to the tuning suite (and all) only"},
	{[]string{"requests"}, func(ef *evalFlags) bool { return suiteIn(ef, "inference", "all") },
		"--%s applies to the inference suite (and all) only"},
	{overheadFlagNames, func(ef *evalFlags) bool { return ef.suite == "overhead" },
		"--%s applies to the overhead suite (--suite overhead) only"},
	{[]string{"policy"}, func(ef *evalFlags) bool { return suiteIn(ef, "training", "all", "overhead") },
		"--%s chooses the training suite's schemes (and the overhead suite's trace policies); the tuning and inference suites run their own"},
	{[]string{"mode"}, func(ef *evalFlags) bool { return suiteIn(ef, "training", "all") },
		"--%s chooses the training suite's schemes; the other suites run their own"},
	{[]string{"gpus", "gpu-placement"}, func(ef *evalFlags) bool { return suiteIn(ef, "training", "tuning", "all") },
		"--%s sets the node's GPUs for the training and tuning suites (the inference suite counts the GPUs it needs)"},
	{simDeviceFlagNames(), func(ef *evalFlags) bool { return ef.suite != "overhead" },
		"--%s is a parameter of the simulator's device model; the overhead suite runs real processes"},
}

// simDeviceFlagNames are deviceFlags' flags but --capacity-mib, which the overhead
// suite's daemon takes too.
func simDeviceFlagNames() []string {
	var probe deviceFlags
	cmd := &cobra.Command{}
	probe.register(cmd)
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "capacity-mib" {
			names = append(names, f.Name)
		}
	})
	return names
}

// runningModes are the sharing modes the runs of ef use, or nil where that is not
// known before the runs.
func (ef *evalFlags) runningModes() []string {
	var schemes []eval.Scheme
	if suiteIn(ef, "training", "all") {
		switch eng, err := engine.Lookup(ef.engine); {
		case err != nil:
			return nil // the run says why
		case len(ef.policies) == 0 && len(ef.modes) == 0:
			schemes = eval.SchemesFor(eng, eval.TrainingSchemes) // the suite's defaults that the engine runs
		default:
			var err error
			if schemes, err = eval.ResolveSchemes(ef.policies, ef.modes, ef.df.modes); err != nil {
				return nil // the run says why
			}
		}
	}
	if suiteIn(ef, "tuning", "all") {
		schemes = append(schemes, eval.TuningSchemes...)
	}
	if suiteIn(ef, "inference", "all") {
		schemes = append(schemes, eval.InferenceSchemes...)
	}
	if len(schemes) == 0 {
		return nil // overhead, or an unknown suite: its run says why
	}
	var modes []string
	for _, s := range schemes {
		if m := fmt.Sprint(s.Mode); !slices.Contains(modes, m) {
			modes = append(modes, m)
		}
	}
	return modes
}

// checkApplies refuses a flag given where it would do nothing: a silently ignored
// flag makes people believe they measured what they did not.
func (ef *evalFlags) checkApplies(fs *pflag.FlagSet) error {
	rules := slices.Clone(evalFlagRules)
	// An engine's own flags act under that engine only.
	for _, name := range slices.Sorted(maps.Keys(ef.engineFlags)) {
		rules = append(rules, flagRule{ef.engineFlags[name], func(ef *evalFlags) bool { return ef.engine == name },
			"--%s applies to the " + name + " engine (--engine " + name + ") only"})
	}
	for _, r := range rules {
		if r.applies(ef) {
			continue
		}
		for _, name := range r.flags {
			if fs.Lookup(name) != nil && fs.Changed(name) {
				return fmt.Errorf(r.refusal+" (here: --suite %s%s): drop it", name, ef.suite, engineNote(ef))
			}
		}
	}
	if err := ef.tf.check(fs); err != nil {
		return err
	}
	if modes := ef.runningModes(); modes != nil {
		return ef.df.checkModes(fs, modes)
	}
	return nil
}

func engineNote(ef *evalFlags) string {
	var b strings.Builder
	if ef.tf.file != "" {
		fmt.Fprintf(&b, " with --trace %s", ef.tf.file)
	}
	if ref := engine.Reference(); ref == nil || ef.engine != ref.Name() {
		fmt.Fprintf(&b, " --engine %s", ef.engine)
	}
	return b.String()
}
