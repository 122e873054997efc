package main

import (
	"fmt"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eval"
	"github.com/spf13/cobra"
)

func newSimulateCmd() *cobra.Command {
	var (
		tf     traceFlags
		df     deviceFlags
		policy string
		mode   string
		logTo  string
	)
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Simulate one trace under one policy and print its metrics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := core.Lookup(policy)
			if err != nil {
				return err
			}
			if mode == "" {
				mode = p.Mode
			}
			trace, err := tf.trace()
			if err != nil {
				return err
			}
			dev, err := df.device()
			if err != nil {
				return err
			}
			run, err := eval.Simulate(trace, eval.Scheme{Mode: mode, Policy: p.Name}, df.modes, dev, logTo)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "trace %s (%d jobs), %s (mode %s), device %s\n", trace.Name, len(trace.Jobs), run.Scheme, run.Mode, dev.Describe())
			fmt.Fprintf(w, "makespan      %10.1f s\navg JCT       %10.1f s\np95 JCT       %10.1f s\navg queuing   %10.1f s\nGPU busy      %10.1f %%\npeak memory   %10.0f MiB\n",
				run.MakespanS, run.AvgJCTS, run.P95JCTS, run.AvgQueuingS, run.GPUBusy*100, run.PeakMemoryMiB)
			if logTo != "" {
				fmt.Fprintf(w, "event log     %s\n", logTo)
			}
			return nil
		},
	}
	tf.register(cmd)
	df.register(cmd)
	cmd.Flags().StringVar(&policy, "policy", "pack", fmt.Sprint("policy: ", core.Names()))
	cmd.Flags().StringVar(&mode, "mode", "", "sharing mode (default: the policy's own): "+fmt.Sprint(core.Modes))
	cmd.Flags().StringVar(&logTo, "log", "", "write the event log here (JSON Lines; gzip when the name ends in .gz)")
	return cmd
}
