package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/salusgo/salus/workload"
	"github.com/spf13/cobra"
)

func newTraceCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "trace", Short: "Generate and validate traces"}
	cmd.AddCommand(newTraceValidateCmd(), newTraceGenCmd())
	return cmd
}

func newTraceValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check trace files; errors name the file, line and field",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, path := range args {
				t, err := workload.ReadTraceFile(path, workload.Default())
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok, %d jobs, arrivals from %.1f s to %.1f s\n",
					path, len(t.Jobs), t.Jobs[0].ArrivalS, t.Jobs[len(t.Jobs)-1].ArrivalS)
			}
			return nil
		},
	}
}

func newTraceGenCmd() *cobra.Command {
	var (
		o      workload.GenOptions
		format string
		out    string
	)
	cmd := &cobra.Command{
		Use:   "gen",
		Short: "Generate a trace like the paper's (salus100: 100 training jobs arriving over time)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format, "csv", "jsonl"); err != nil {
				return err
			}
			t, err := workload.Generate(workload.Default(), o)
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			if format == "jsonl" {
				err = t.WriteJSONL(&buf)
			} else {
				err = t.WriteCSV(&buf)
			}
			if err != nil {
				return err
			}
			if out == "" || out == "-" {
				_, err = cmd.OutOrStdout().Write(buf.Bytes())
				return err
			}
			return os.WriteFile(out, buf.Bytes(), 0o644)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Kind, "kind", workload.Salus100, "trace kind: salus100")
	f.Int64Var(&o.Seed, "seed", 1, "random seed")
	f.IntVar(&o.Jobs, "jobs", 100, "number of jobs")
	f.Float64Var(&o.Load, "load", 1, "arrival-rate multiplier (1: offered load equals one GPU)")
	f.StringVar(&format, "format", "csv", "csv or jsonl")
	f.StringVarP(&out, "output", "o", "", "write to this file instead of standard output")
	return cmd
}
