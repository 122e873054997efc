package main

import (
	"errors"
	"fmt"

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
}

func newEvalCmd() *cobra.Command {
	var ef evalFlags
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Run the paper's experiments (default: the training suite on the salus100 trace)",
		Long: `Run an evaluation suite and print its results.

With no arguments, runs the long-running training experiment: the generated salus100
trace (seed 1) under fifo, srtf, pack and fair, and today's alternatives (MPS,
time-slicing, suspend/resume), in the simulator, and prints makespan, average
queuing, average and p95 JCT, and each scheme's ratio to fifo beside the paper's
headline.

Suites: training, tuning (hyper-parameter exploration), inference, overhead (the live
engine's per-iteration cost on real PyTorch jobs: --engine live), all (training, tuning
and inference).

A flag given where it does nothing (--trace to the tuning suite, --slice when no run
time-slices, --iterations outside the overhead suite) is refused with a message naming it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := ef.checkApplies(cmd.Flags()); err != nil {
				return err
			}
			if run, ok := evalSuites[ef.suite]; ok { // suites in other files (overhead.go)
				return run(cmd, evalArgs{engine: ef.engine, policies: ef.policies, format: ef.format, out: ef.out, capacityMiB: ef.df.capacityMiB})
			}
			ef.lf.stderr = cmd.ErrOrStderr()
			rep, failed := ef.run()
			if rep == nil {
				return failed
			}
			// Runs that failed are rows of the report: print it, then fail.
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
	f.StringVar(&ef.suite, "suite", "training", "suite: training, tuning, inference, overhead or all")
	f.StringVar(&ef.engine, "engine", "sim", "engine: sim, or live (the daemon and real worker processes; see salus replay)")
	ef.lf.register(cmd)
	addOutFlag(f, &ef.out, "", "directory for event logs, results.json, results.csv, plots (PNG, SVG) and index.html")
	ef.outputFlags.register(cmd, "o", "table", "json", "csv")
	f.IntVar(&ef.tuning.Jobs, "tuning-jobs", 300, "tuning: jobs per workload")
	f.IntVar(&ef.tuning.Iterations, "tuning-iterations", 500, "tuning: iterations per job")
	f.IntVar(&ef.infer.Requests, "requests", 100, "inference: requests per job")
	for _, add := range evalFlagHooks {
		add(f)
	}
	return cmd
}

// run validates the flags, runs the suite and writes --out; it prints nothing.
func (ef *evalFlags) run() (eval.Output, error) {
	if err := checkFormat(ef.format, "table", "json", "csv"); err != nil { // not ef.check: replay registers its own --format
		return nil, err
	}
	switch {
	case ef.engine == "live" && ef.suite != "training":
		return nil, fmt.Errorf("--engine live runs the training suite only (not %q)", ef.suite)
	case ef.engine != "sim" && ef.engine != "live":
		return nil, fmt.Errorf("unknown --engine %q: choose sim or live", ef.engine)
	}
	if _, err := ef.df.device(); err != nil {
		return nil, err
	}
	if ef.out != "" {
		if err := createOut(ef.out); err != nil {
			return nil, err
		}
	}
	var rep eval.Output
	// failed is a training report's *eval.RunsFailed: its report holds the other
	// runs and a row for each failed one, so it is written and printed anyway.
	var failed *eval.RunsFailed
	keep := func(err error) error {
		if errors.As(err, &failed) {
			return nil
		}
		return err
	}
	var err error
	switch ef.suite {
	case "training":
		var tr *eval.Report
		tr, err = ef.training()
		err, rep = keep(err), tr
	case "tuning":
		rep, err = ef.tuningSuite()
	case "inference":
		rep, err = ef.inference()
	case "all":
		var tr *eval.Report
		var tu *eval.TuningReport
		var in *eval.InferenceReport
		if tr, err = ef.training(); keep(err) != nil {
			return nil, err
		}
		if tu, err = ef.tuningSuite(); err != nil {
			return nil, err
		}
		if in, err = ef.inference(); err != nil {
			return nil, err
		}
		rep = eval.All(tr, tu, in)
	default:
		return nil, fmt.Errorf("unknown --suite %q: choose training, tuning, inference or all", ef.suite)
	}
	if err != nil {
		return nil, err
	}
	if ef.out != "" {
		if err := eval.WriteResults(ef.out, rep); err != nil {
			return nil, err
		}
		if err := writeReport(ef.out, rep, ef.reportTrace()); err != nil {
			return nil, err
		}
	}
	if failed != nil {
		return rep, failed
	}
	return rep, nil
}

func (ef *evalFlags) training() (*eval.Report, error) {
	trace, err := ef.tf.trace()
	if err != nil {
		return nil, err
	}
	dev, _ := ef.df.device()
	schemes, err := eval.ResolveSchemes(ef.policies, ef.modes, ef.df.modes)
	if err != nil {
		return nil, err
	}
	o := eval.TrainingOptions{Trace: trace, Schemes: schemes, Device: dev, Modes: ef.df.modes, OutDir: ef.out}
	if ef.engine == "live" {
		if err := ef.lf.apply(&o, ef.policies, ef.modes); err != nil {
			return nil, err
		}
	}
	return eval.Training(o)
}

func (ef *evalFlags) tuningSuite() (*eval.TuningReport, error) {
	o := ef.tuning
	o.Device, _ = ef.df.device()
	o.Modes, o.OutDir = ef.df.modes, ef.out
	if o.Jobs < 1 || o.Iterations < 1 {
		return nil, fmt.Errorf("--tuning-jobs and --tuning-iterations must be at least 1")
	}
	return eval.Tuning(o)
}

func (ef *evalFlags) inference() (*eval.InferenceReport, error) {
	o := ef.infer
	o.Device, _ = ef.df.device()
	o.Modes, o.Seed = ef.df.modes, ef.tf.seed
	if o.Requests < 1 {
		return nil, fmt.Errorf("--requests must be at least 1")
	}
	return eval.Inference(o)
}
