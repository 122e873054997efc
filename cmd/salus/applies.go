package main

import (
	"fmt"
	"slices"
	"strings"

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
	{[]string{"trace"}, func(ef *evalFlags) bool { return suiteIn(ef, "training", "all") },
		"--%s applies to the training suite (and all) only"},
	{[]string{"load"}, func(ef *evalFlags) bool { return ef.tf.file == "" && suiteIn(ef, "training", "all") },
		"--%s scales the generated trace of the training suite; it does nothing to a --trace file"},
	{[]string{"seed"}, func(ef *evalFlags) bool {
		return (ef.tf.file == "" && suiteIn(ef, "training", "all")) || suiteIn(ef, "inference", "all")
	}, "--%s draws the generated trace of the training suite (and the inference suite's pauses); it does nothing to a --trace file"},
	{[]string{"tuning-jobs", "tuning-iterations"}, func(ef *evalFlags) bool { return suiteIn(ef, "tuning", "all") },
		"--%s applies to the tuning suite (and all) only"},
	{[]string{"requests"}, func(ef *evalFlags) bool { return suiteIn(ef, "inference", "all") },
		"--%s applies to the inference suite (and all) only"},
	{[]string{"time-scale", "server", "server-log"}, func(ef *evalFlags) bool { return ef.engine == "live" || ef.suite == "overhead" },
		"--%s applies to the live engine (--engine live) only"},
	{overheadFlagNames, func(ef *evalFlags) bool { return ef.suite == "overhead" },
		"--%s applies to the overhead suite (--suite overhead) only"},
}

// checkApplies refuses a flag given where it would do nothing: a silently ignored
// flag makes people believe they measured what they did not.
func (ef *evalFlags) checkApplies(fs *pflag.FlagSet) error {
	for _, r := range evalFlagRules {
		if r.applies(ef) {
			continue
		}
		for _, name := range r.flags {
			if fs.Lookup(name) != nil && fs.Changed(name) {
				return fmt.Errorf(r.refusal+" (here: --suite %s%s): drop it", name, ef.suite, engineNote(ef))
			}
		}
	}
	return nil
}

func engineNote(ef *evalFlags) string {
	var b strings.Builder
	if ef.tf.file != "" {
		fmt.Fprintf(&b, " with --trace %s", ef.tf.file)
	}
	if ef.engine != "sim" {
		fmt.Fprintf(&b, " --engine %s", ef.engine)
	}
	return b.String()
}
