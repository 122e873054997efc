package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/salusgo/salus/workload"
	"github.com/spf13/cobra"
)

func init() { registerCommand(40, newTraceCmd) }

func newTraceCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "trace", Short: "Generate, validate and summarize traces"}
	cmd.AddCommand(newTraceValidateCmd(), newTraceGenCmd(), newTraceStatsCmd(), newTraceImportCmd())
	for _, add := range traceSubcommands {
		cmd.AddCommand(add())
	}
	return cmd
}

// traceSubcommands lets other files add subcommands to salus trace.
var traceSubcommands []func() *cobra.Command

// validateShown is how many of a file's problems trace validate prints; it
// counts the rest.
const validateShown = 100

func newTraceValidateCmd() *cobra.Command {
	var catalogs []string
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check every row of trace files; each problem names the file, line and field",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cat, err := loadCatalog(catalogs)
			if err != nil {
				return err
			}
			var (
				bad   []string
				first error // the first file's first problem
			)
			for _, path := range args {
				tc, err := workload.CheckTraceFile(path, cat, validateShown)
				if err != nil {
					return err
				}
				if tc.Count == 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: ok, %d jobs, arrivals from %.1f s to %.1f s\n", path, tc.Jobs, tc.FirstS, tc.LastS)
					continue
				}
				w := cmd.ErrOrStderr()
				for _, p := range tc.Problems {
					fmt.Fprintln(w, p)
				}
				if more := tc.Count - len(tc.Problems); more > 0 {
					fmt.Fprintf(w, "%s: ... and %d more problems (the first %d are above)\n", path, more, len(tc.Problems))
				}
				if first == nil {
					first = tc.Problems[0]
				}
				bad = append(bad, fmt.Sprintf("%s: %d problems, %d good rows", path, tc.Count, tc.Jobs))
			}
			if len(bad) > 0 {
				return fmt.Errorf("%w; in all %s: fix the lines named above", first, strings.Join(bad, "; "))
			}
			return nil
		},
	}
	addCatalogFlag(cmd, &catalogs)
	return cmd
}

func newTraceGenCmd() *cobra.Command {
	var (
		o   workload.GenOptions
		of  outputFlags
		out string
	)
	cmd := &cobra.Command{
		Use:   "gen",
		Short: "Generate a trace like the paper's (paper: 100 training jobs as the paper describes them; or salus100)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := of.check(); err != nil {
				return err
			}
			t, err := workload.Generate(workload.Default(), o)
			if err != nil {
				return fmt.Errorf("trace gen --kind %s: %w", o.Kind, err)
			}
			var buf bytes.Buffer
			if of.format == "jsonl" {
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
	f.StringVar(&o.Kind, "kind", workload.Paper, "trace kind: "+kindsHelp())
	f.Int64Var(&o.Seed, "seed", 1, "random seed")
	f.IntVar(&o.Jobs, "jobs", 100, "number of jobs")
	f.Float64Var(&o.Load, "load", 1, "arrival-rate multiplier (paper: the 49-min arrival window is divided by it; salus100: 1 is an offered load of one GPU)")
	// -o stays the file here for a while (deprecated): elsewhere it is --format.
	of.register(cmd, "", "csv", "jsonl")
	addOutFlag(f, &out, "", "write the trace to this file instead of standard output")
	deprecatedAlias(f, &out, "output", "o", "out")
	return cmd
}
