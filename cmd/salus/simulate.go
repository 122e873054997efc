package main

import (
	"fmt"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/sim"
	"github.com/spf13/cobra"
)

func newSimulateCmd() *cobra.Command {
	var (
		tf     traceFlags
		df     deviceFlags
		policy string
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
			trace, err := tf.trace()
			if err != nil {
				return err
			}
			dev, err := df.device()
			if err != nil {
				return err
			}
			c := metrics.NewCollector()
			sinks := eventlog.Sinks{c}
			var file *eventlog.File
			if logTo != "" {
				if file, err = eventlog.Create(logTo); err != nil {
					return err
				}
				sinks = append(sinks, file)
			}
			err = sim.Run(trace, sim.Options{Policy: p, Device: dev, Sink: sinks})
			if file != nil {
				if cerr := file.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				return err
			}
			res, err := c.Result()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "trace %s (%d jobs), policy %s, device %s\n", trace.Name, len(trace.Jobs), p.Name, dev.Name)
			fmt.Fprintf(w, "makespan      %10.1f s\navg JCT       %10.1f s\np95 JCT       %10.1f s\navg queuing   %10.1f s\nGPU busy      %10.1f %%\npeak memory   %10.0f MiB\n",
				res.MakespanS, res.AvgJCTS, res.P95JCTS, res.AvgQueuingS, res.GPUBusy*100, res.PeakMemoryMiB)
			if logTo != "" {
				fmt.Fprintf(w, "event log     %s\n", logTo)
			}
			return nil
		},
	}
	tf.register(cmd)
	df.register(cmd)
	cmd.Flags().StringVar(&policy, "policy", "pack", "policy: "+fmt.Sprint(core.Names()))
	cmd.Flags().StringVar(&logTo, "log", "", "write the event log here (JSON Lines; gzip when the name ends in .gz)")
	return cmd
}
