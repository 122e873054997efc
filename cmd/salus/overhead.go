package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/live"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// evalArgs are the eval command's common flags, handed to suites defined in other
// files of this command.
type evalArgs struct {
	engine, format, out string
	policies            []string
	capacityMiB         float64
}

var (
	// evalSuites maps a --suite name to its runner, for suites outside eval.go.
	evalSuites = map[string]func(*cobra.Command, evalArgs) error{}
	// evalFlagHooks add those suites' flags to the eval command.
	evalFlagHooks []func(*pflag.FlagSet)
)

// The overhead suite: `salus eval --suite overhead --engine live --worker pytorch`.
var overheadFlags struct {
	worker, python, examples, torchDevice    string
	models                                   []string
	iterations, warmup, reps, threads, block int
	noTrace                                  bool
}

func init() {
	evalSuites["overhead"] = runOverhead
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

func runOverhead(cmd *cobra.Command, a evalArgs) error {
	o := overheadFlags
	if a.engine != "live" {
		return fmt.Errorf("the overhead suite measures real processes: use --engine live (got %q)", a.engine)
	}
	if o.worker != "pytorch" {
		return fmt.Errorf("the overhead suite runs --worker pytorch (got %q)", o.worker)
	}
	if a.out != "" {
		if err := createOut(a.out); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	progress := cmd.ErrOrStderr()
	rep, err := eval.Overhead(ctx, eval.OverheadOptions{
		PyTorch:    live.PyTorch{Python: o.python, Examples: o.examples, Threads: o.threads, Device: o.torchDevice},
		Models:     o.models,
		Iterations: o.iterations, Warmup: o.warmup, Reps: o.reps, Block: o.block,
		TracePolicies: a.policies, NoTrace: o.noTrace, OutDir: a.out, Progress: progress, CapacityMiB: a.capacityMiB,
	})
	if err != nil {
		return err
	}
	if a.out != "" {
		f, err := os.Create(filepath.Join(a.out, "overhead.json"))
		if err != nil {
			return err
		}
		enc := json.NewEncoder(f)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	w := cmd.OutOrStdout()
	switch a.format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write([]string{"model", "alone_s", "daemon_s", "ratio", "added_us", "wait_us", "reps"})
		for _, r := range rep.Rows {
			cw.Write([]string{r.Model, fnum(r.AloneS), fnum(r.DaemonS), fnum(r.Ratio), fnum(r.AddedUS), fnum(r.WaitUS), strconv.Itoa(len(r.AloneRuns))})
		}
		cw.Flush()
		return cw.Error()
	}
	return rep.Table(w)
}

func fnum(f float64) string { return strconv.FormatFloat(f, 'f', 6, 64) }
