package main

import (
	"fmt"

	"github.com/salusgo/salus/eval"
	"github.com/spf13/cobra"
)

func newEvalCmd() *cobra.Command {
	var (
		tf       traceFlags
		df       deviceFlags
		policies []string
		suite    string
		engine   string
		out      string
		format   string
	)
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Run the paper's experiments (default: the training suite on the salus100 trace)",
		Long: `Run an evaluation suite and print its results.

With no arguments, runs the long-running training experiment: the generated salus100
trace (seed 1) under fifo, srtf, pack and fair in the simulator, and prints makespan,
average queuing, average and p95 JCT, and each policy's ratio to fifo beside the
paper's headline.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format, "table", "json", "csv"); err != nil {
				return err
			}
			if run, ok := evalSuites[suite]; ok { // suites in other files (overhead.go)
				return run(cmd, evalArgs{engine: engine, policies: policies, format: format, out: out, capacityMiB: df.capacityMiB})
			}
			if suite != "training" {
				return fmt.Errorf("unknown --suite %q: choose training", suite)
			}
			if engine != "sim" {
				return fmt.Errorf("unknown --engine %q: choose sim", engine)
			}
			trace, err := tf.trace()
			if err != nil {
				return err
			}
			dev, err := df.device()
			if err != nil {
				return err
			}
			if out != "" {
				if err := createOut(out); err != nil {
					return err
				}
			}
			rep, err := eval.Training(eval.TrainingOptions{Trace: trace, Policies: policies, Device: dev, OutDir: out})
			if err != nil {
				return err
			}
			if out != "" {
				if err := rep.WriteResults(out); err != nil {
					return err
				}
			}
			w := cmd.OutOrStdout()
			switch format {
			case "json":
				return rep.JSON(w)
			case "csv":
				return rep.CSV(w)
			}
			if err := rep.Table(w); err != nil {
				return err
			}
			if out != "" {
				fmt.Fprintf(w, "\nWrote event logs, results.json and results.csv to %s\n", out)
			}
			return nil
		},
	}
	tf.register(cmd)
	df.register(cmd)
	f := cmd.Flags()
	f.StringArrayVar(&policies, "policy", nil, "policy to run (repeatable; default: fifo, srtf, pack, fair)")
	f.StringVar(&suite, "suite", "training", "suite to run: training")
	f.StringVar(&engine, "engine", "sim", "engine: sim")
	f.StringVar(&out, "out", "", "directory for event logs, results.json and results.csv")
	f.StringVar(&format, "format", "table", "output format: table, json or csv")
	for _, add := range evalFlagHooks {
		add(f)
	}
	return cmd
}
