package main

import (
	"encoding/json"

	"github.com/salusgo/salus/workload"
	"github.com/spf13/cobra"
)

func newTraceStatsCmd() *cobra.Command {
	var (
		tf     traceFlags
		format string
	)
	cmd := &cobra.Command{
		Use:   "stats [FILE]",
		Short: "Summarize what a trace asks of a GPU: jobs, span, offered load, mix, memory",
		Long: `Summarize a trace file, or the generated salus100 trace (--seed, --load) when no
file is given: number of jobs, arrival span, GPU time demanded and offered load
(GPU time demanded / arrival span), the mix of models and lengths, and memory demand.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "table", "json"); err != nil {
				return err
			}
			if len(args) == 1 {
				tf.file = args[0]
			}
			t, err := tf.trace()
			if err != nil {
				return err
			}
			s := workload.TraceStats(t)
			if format == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(s)
			}
			return s.Write(cmd.OutOrStdout())
		},
	}
	tf.register(cmd)
	cmd.Flags().StringVar(&format, "format", "table", "output format: table or json")
	return cmd
}
