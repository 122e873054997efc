package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/salusgo/salus/engine"
	"github.com/salusgo/salus/eval"
)

// flagRule says where a flag of salus eval takes effect, and what to say when it
// is given elsewhere (%s: the flag's name).
type flagRule struct {
	flags   []string
	applies func(ef *evalFlags) bool
	refusal string
}

// rules are where salus eval's flags act, all from the registries: a common
// flag (eval.CommonFlags) under the suites that read it, a suite's own flags
// under that suite, an engine's under that engine, the simulator's device model
// where a suite does not measure real processes. The modes' parameters are
// checked against the modes that run (checkModes).
func (ef *evalFlags) rules() []flagRule {
	var rules []flagRule
	for _, name := range eval.CommonFlags {
		var readers []string
		inAll := false
		for _, s := range eval.Selected(eval.AllName) {
			if slices.Contains(eval.Reads(s), name) {
				inAll = true
			}
		}
		for _, n := range eval.Names() {
			if s, err := eval.Lookup(n); err == nil && slices.Contains(eval.Reads(s), name) {
				readers = append(readers, n)
			}
		}
		where := "the " + strings.Join(readers, " and ") + " suite"
		if n := len(readers); n > 2 {
			where = "the " + strings.Join(readers[:n-1], ", ") + " and " + readers[n-1] + " suite"
		}
		if len(readers) > 1 {
			where += "s"
		}
		if inAll {
			where += " (and all)"
		}
		flags := []string{name}
		if name == "policy" {
			flags = append(flags, "policy-file") // it acts where --policy does
		}
		rules = append(rules, flagRule{flags, func(ef *evalFlags) bool {
			for _, s := range eval.Selected(ef.suite) {
				if slices.Contains(eval.Reads(s), name) {
					return true
				}
			}
			return false
		}, "--%s applies to " + where + " only"})
	}
	for _, suite := range slices.Sorted(maps.Keys(ef.suiteFlags)) {
		rules = append(rules, flagRule{ef.suiteFlags[suite], func(ef *evalFlags) bool {
			for _, s := range eval.Selected(ef.suite) {
				if s.Name() == suite {
					return true
				}
			}
			return false
		}, "--%s applies to the " + suite + " suite (--suite " + suite + ") only"})
	}
	for _, name := range slices.Sorted(maps.Keys(ef.engineFlags)) {
		rules = append(rules, flagRule{ef.engineFlags[name], func(ef *evalFlags) bool { return ef.engine == name },
			"--%s applies to the " + name + " engine (--engine " + name + ") only"})
	}
	rules = append(rules, flagRule{[]string{"repeat"}, func(ef *evalFlags) bool {
		ref := engine.Reference()
		return (ref == nil || ef.engine != ref.Name()) && slices.Contains(repeatSuites, ef.suite)
	}, "--%s repeats live runs (--engine live, the training suite; salus replay): the simulator gives the same figures every time, salus sweep --seeds gives intervals over traces"})
	rules = append(rules, flagRule{simDeviceFlagNames(), func(ef *evalFlags) bool {
		for _, s := range eval.Selected(ef.suite) {
			if _, real := s.(eval.MeasuresReal); !real {
				return true
			}
		}
		return len(eval.Selected(ef.suite)) == 0
	}, "--%s is a parameter of the simulator's device model; the suite runs real processes"})
	return rules
}

// simDeviceFlagNames are deviceFlags' flags but --capacity-mib, which a suite
// that runs real processes takes too.
func simDeviceFlagNames() []string {
	var probe deviceFlags
	cmd := &cobra.Command{}
	probe.register(cmd)
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "capacity-mib" && !slices.Contains(eval.CommonFlags, f.Name) {
			names = append(names, f.Name)
		}
	})
	return names
}

// runningModes are the sharing modes the runs of ef use, or nil where that is not
// known before the runs.
func (ef *evalFlags) runningModes() []string {
	eng, err := engine.Lookup(ef.engine)
	if err != nil {
		return nil // the run says why
	}
	o := eval.Options{Engine: eng}
	if len(ef.policies) > 0 || len(ef.modes) > 0 {
		if o.Schemes, err = eval.ResolveSchemes(ef.policies, ef.modes, ef.df.modes); err != nil {
			return nil // the run says why
		}
		o.Training.Schemes = o.Schemes // the training suite's section, as ef.training sets it
	}
	var schemes []eval.Scheme
	for _, s := range eval.Selected(ef.suite) {
		if sc, ok := s.(eval.Schemer); ok {
			schemes = append(schemes, sc.Schemes(o)...)
		}
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
	var rules []flagRule
	if eval.Selected(ef.suite) != nil { // an unknown suite: the run says why
		rules = ef.rules()
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
