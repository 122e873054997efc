package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/salusgo/salus/workload"
	"github.com/spf13/cobra"
)

func init() { registerCommand(30, newModelsCmd) }

func newModelsCmd() *cobra.Command {
	var (
		of       outputFlags
		catalogs []string
	)
	cmd := &cobra.Command{
		Use:   "models",
		Short: "List the workload catalog: per-iteration time, start-up, memory and compute demand",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := of.check(); err != nil {
				return err
			}
			cat, err := loadCatalog(catalogs)
			if err != nil {
				return err
			}
			profiles := cat.Profiles()
			w := cmd.OutOrStdout()
			if of.format == "json" {
				type entry struct {
					workload.Profile
					FromFile bool `json:"from_file,omitempty"`
				}
				out := make([]entry, len(profiles))
				for i, p := range profiles {
					out[i] = entry{p, cat.FromFile(p.Key())}
				}
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "MODEL\tBATCH\tKIND\tITER (ms)\tSTART-UP (s)\tPEAK (MiB)\tPERSISTENT\tEPHEMERAL\tDEMAND\tTIMES")
			for _, p := range profiles {
				times := "measured"
				if p.Estimated {
					times = "estimated"
				}
				if cat.FromFile(p.Key()) {
					times = "catalog file"
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f\t%.1f\t%.0f\t%.0f\t%.0f\t%.2f\t%s\n", p.Model, p.Batch, p.Kind,
					p.IterS*1e3, p.StartupS, p.PeakMiB, p.PersistentMiB, p.EphemeralMiB, p.Demand, times)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(w, "\nWhere each figure comes from: salus models --format json (field \"source\").")
			return nil
		},
	}
	of.register(cmd, "o", "table", "json")
	addCatalogFlag(cmd, &catalogs)
	return cmd
}
