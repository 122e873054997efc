package main

import (
	"encoding/json"
	"fmt"

	"github.com/salusgo/salus/workload"
	"github.com/spf13/cobra"
)

func newTraceStatsCmd() *cobra.Command {
	var (
		tf traceFlags
		of outputFlags
	)
	cmd := &cobra.Command{
		Use:   "stats [FILE]",
		Short: "Summarize what a trace asks of a GPU: jobs, span, offered load, mix, memory",
		Long: `Summarize a trace file, or the generated trace (--trace-kind, --seed, --load) when no
file is given: number of jobs, arrival span, GPU time demanded and offered load
(GPU time demanded / arrival span), the mix of models and lengths, and memory demand.
A job on several GPUs (gpus > 1) demands its GPU time on each of them: the offered
load is the sum over jobs of gpus x time alone / span, the GPUs the trace keeps busy.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := of.check(); err != nil {
				return err
			}
			if len(args) == 1 {
				if tf.file != "" && tf.file != args[0] {
					return fmt.Errorf("two trace files: %s and --trace %s (deprecated): give one", args[0], tf.file)
				}
				tf.file = args[0]
			}
			if err := tf.check(cmd.Flags()); err != nil {
				return err
			}
			t, err := tf.traceFor(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			s := workload.TraceStats(t)
			if of.format == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(s)
			}
			return s.Write(cmd.OutOrStdout())
		},
	}
	tf.registerGenerator(cmd)
	addCatalogFlag(cmd, &tf.catalogs)
	of.register(cmd, "o", "table", "json")
	deprecatedFlag(cmd.Flags(), &tf.file, "trace", "give the file as the argument: salus trace stats FILE")
	return cmd
}
