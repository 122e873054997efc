package main

import (
	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/live"
	"github.com/spf13/pflag"
)

// evalFlagHooks add suites' own flags to the eval command.
var evalFlagHooks []func(*pflag.FlagSet)

// The overhead suite's flags: `salus eval --suite overhead --engine live --worker pytorch`.
var overheadFlags struct {
	worker, python, examples, torchDevice    string
	models                                   []string
	iterations, warmup, reps, threads, block int
	noTrace                                  bool
}

func init() {
	evalFlagHooks = append(evalFlagHooks, func(f *pflag.FlagSet) {
		o := &overheadFlags
		f.StringVar(&o.worker, "worker", "pytorch", "overhead suite: worker processes (pytorch: the real jobs of examples/)")
		f.StringVar(&o.python, "python", "/usr/bin/python3", "overhead suite: Python interpreter that can import torch")
		f.StringVar(&o.examples, "examples", "", "overhead suite: directory of train.py (default: examples/ of the repository)")
		f.StringSliceVar(&o.models, "models", nil, "overhead suite: example models (default cnn,resnet18,mlp)")
		f.IntVar(&o.iterations, "iterations", 40, "overhead suite: iterations per run")
		f.IntVar(&o.block, "block", 1, "overhead suite: iterations per block, alternating under the daemon and without it")
		f.IntVar(&o.warmup, "warmup", 5, "overhead suite: first iterations left out of the median")
		f.IntVar(&o.reps, "reps", 3, "overhead suite: repetitions, alone and under the daemon")
		f.IntVar(&o.threads, "threads", 2, "overhead suite: torch threads per job")
		f.StringVar(&o.torchDevice, "torch-device", "auto", "overhead suite: auto, cpu or cuda")
		f.BoolVar(&o.noTrace, "no-trace", false, "overhead suite: skip the live trace of real jobs")
	})
}

// overheadOptions are the overhead suite's options from its flags; capacityMiB is
// --capacity-mib (0: the suite's default).
func overheadOptions(capacityMiB float64) eval.OverheadOptions {
	o := overheadFlags
	return eval.OverheadOptions{
		PyTorch:    live.PyTorch{Python: o.python, Examples: o.examples, Threads: o.threads, Device: o.torchDevice},
		Models:     o.models,
		Iterations: o.iterations, Warmup: o.warmup, Reps: o.reps, Block: o.block,
		NoTrace: o.noTrace, CapacityMiB: capacityMiB,
	}
}
