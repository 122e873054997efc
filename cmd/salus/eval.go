package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/salusgo/salus/device"

	"github.com/salusgo/salus/eval"
	"github.com/spf13/cobra"
)

// evalFlags are salus eval's flags.
type evalFlags struct {
	tf traceFlags
	df deviceFlags
	schemeFlags
	outputFlags
	suite  string
	engine string
	out    string
	lf     liveFlags
	tuning eval.TuningOptions
	infer  eval.InferenceOptions
	// progress receives the suites' progress lines (stderr).
	progress io.Writer
}

func newEvalCmd() *cobra.Command {
	var ef evalFlags
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Run the paper's experiments (default: the training suite on the generated paper trace)",
		Long: `Run an evaluation suite and print its results.

With no arguments, runs the long-running training experiment: the generated paper
trace (seed 1; --trace-kind salus100 for the earlier stand-in) under fifo, srtf, pack and fair, and today's alternatives (MPS,
time-slicing, suspend/resume), in the simulator, and prints makespan, average
queuing, average and p95 JCT, each scheme's ratio to fifo beside the paper's
headline, and its fairness: Jain's index of the jobs' slowdowns (JCT over the
time alone) and the worst slowdown. A paragraph then says which scheme is best on
makespan, average JCT, p95 JCT and fairness, and by how much.

What if: --trace FILE runs your own trace; --load X divides its arrival times by
X (2: twice as fast), --capacity-mib and --device change the device, and
--resample bootstrap|jitter --seed N runs a trace drawn from the file (see docs/traces.md;
salus sweep --trace gives confidence intervals over such draws).

Suites: ` + eval.Describe() + `.
--suite all keeps going when a suite fails: the failure is a section of its report,
and the command exits non-zero.

A flag given where it does nothing (--trace to the tuning suite, --slice when no run
time-slices, --iterations outside the overhead suite) is refused with a message naming it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := ef.checkApplies(cmd.Flags()); err != nil {
				return err
			}
			ef.lf.stderr = cmd.ErrOrStderr()
			ef.progress = cmd.ErrOrStderr()
			rep, failed := ef.run()
			if rep == nil {
				return failed
			}
			// Runs and suites that failed are rows and sections of the report:
			// print it, then fail.
			w := cmd.OutOrStdout()
			var err error
			if ef.engine == "live" {
				err = printLive(w, rep, ef.format, &ef.lf)
			} else {
				err = printReport(w, rep, ef.format)
			}
			if err != nil {
				return err
			}
			if ef.out != "" && ef.format == "table" {
				fmt.Fprintf(w, "\nWrote event logs, results.json, results.csv, plots and index.html to %s\n", ef.out)
			}
			return failed
		},
	}
	ef.tf.register(cmd)
	ef.df.register(cmd)
	f := cmd.Flags()
	ef.schemeFlags.register(cmd, nil, nil, "; default: every scheme of the training suite", "")
	f.StringVar(&ef.suite, "suite", "training", "suite: "+strings.Join(eval.Names(), ", "))
	f.StringVar(&ef.engine, "engine", "sim", "engine: sim, or live (the daemon and real worker processes; see salus replay)")
	ef.lf.register(cmd)
	addOutFlag(f, &ef.out, "", "directory for event logs, results.json, results.csv, plots (PNG, SVG) and index.html")
	ef.outputFlags.register(cmd, "o", "table", "wide", "json", "csv")
	f.IntVar(&ef.tuning.Jobs, "tuning-jobs", 300, "tuning: jobs per workload")
	f.IntVar(&ef.tuning.Iterations, "tuning-iterations", 0, "tuning: iterations per job (0: each set's jobs as long alone as the paper's one-by-one makespan / 300)")
	f.IntVar(&ef.infer.Requests, "requests", 100, "inference: requests per job")
	for _, add := range evalFlagHooks {
		add(f)
	}
	return cmd
}

// run validates the flags, runs the suite and writes --out; it prints nothing. A
// report some of whose runs or suites failed comes back with the error.
func (ef *evalFlags) run() (eval.Result, error) {
	if err := checkFormat(ef.format, "table", "wide", "json", "csv"); err != nil { // not ef.check: replay registers its own --format
		return nil, err
	}
	if ef.suite != eval.AllName {
		if _, err := eval.Lookup(ef.suite); err != nil {
			return nil, fmt.Errorf("unknown --suite %q: choose %s", ef.suite, strings.Join(eval.Names(), ", "))
		}
	}
	switch {
	case ef.engine != "sim" && ef.engine != "live":
		return nil, fmt.Errorf("unknown --engine %q: choose sim or live", ef.engine)
	case ef.engine == "live" && ef.suite != "training" && ef.suite != "overhead":
		return nil, fmt.Errorf("--engine live runs the training and overhead suites only (not %q)", ef.suite)
	case ef.suite == "overhead" && ef.engine != "live":
		return nil, fmt.Errorf("the overhead suite measures real processes: use --engine live (got %q)", ef.engine)
	case ef.suite == "overhead" && overheadFlags.worker != "pytorch":
		return nil, fmt.Errorf("the overhead suite runs --worker pytorch (got %q)", overheadFlags.worker)
	}
	dev, err := ef.df.device()
	if err != nil {
		return nil, err
	}
	if ef.out != "" {
		if err := createOut(ef.out); err != nil {
			return nil, err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := eval.Options{Context: ctx, Engine: ef.engine, Device: dev, Modes: ef.df.modes, OutDir: ef.out, Progress: ef.progress,
		Policies: ef.policies, Tuning: ef.tuning, Inference: ef.infer, Overhead: overheadOptions(ef.df.capacityMiB)}
	o.Inference.Seed = ef.tf.seed
	if suiteIn(ef, "tuning", eval.AllName) && (o.Tuning.Jobs < 1 || o.Tuning.Iterations < 0) {
		return nil, fmt.Errorf("--tuning-jobs must be at least 1 and --tuning-iterations at least 0 (0: the paper's length)")
	}
	if suiteIn(ef, "inference", eval.AllName) && o.Inference.Requests < 1 {
		return nil, fmt.Errorf("--requests must be at least 1")
	}
	if ef.suite == "training" || ef.suite == eval.AllName {
		if o.Training, err = ef.training(dev); err != nil {
			return nil, err
		}
	}
	rep, err := eval.RunSuite(ef.suite, o)
	if rep == nil {
		return nil, err
	}
	if ef.out != "" {
		if werr := eval.WriteResults(ef.out, rep); werr != nil {
			return nil, werr
		}
		if werr := writeReport(ef.out, rep, o.Training.Trace); werr != nil {
			return nil, werr
		}
	}
	return rep, err
}

// training is the training suite's options: the trace, the schemes and, with
// --engine live, the live engine's runner.
func (ef *evalFlags) training(dev device.Device) (eval.TrainingOptions, error) {
	trace, err := ef.tf.traceFor(ef.progress)
	if err != nil {
		return eval.TrainingOptions{}, err
	}
	schemes, err := eval.ResolveSchemes(ef.policies, ef.modes, ef.df.modes)
	if err != nil {
		return eval.TrainingOptions{}, err
	}
	o := eval.TrainingOptions{Trace: trace, Schemes: schemes, Device: dev, Modes: ef.df.modes, OutDir: ef.out}
	if ef.engine == "live" {
		if err := ef.lf.apply(&o, ef.policies, ef.modes); err != nil {
			return eval.TrainingOptions{}, err
		}
	}
	return o, nil
}
