package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/salusgo/salus/interference"
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
			// Where each model's co-location figures come from: the built-in
			// model on the catalog's device, for Salus's lanes.
			coloc, _ := interference.Builtin().ForDevice("p100", interference.Lanes)
			w := cmd.OutOrStdout()
			if of.format == "json" {
				type entry struct {
					workload.Profile
					FromFile   bool   `json:"from_file,omitempty"`
					CoLocation string `json:"co_location"`
				}
				out := make([]entry, len(profiles))
				for i, p := range profiles {
					out[i] = entry{p, cat.FromFile(p.Key()), coloc.SourceOf(interference.Job{Name: p.Model, Batch: p.Batch})}
				}
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "MODEL\tBATCH\tKIND\tITER (ms)\tSTART-UP (s)\tPEAK (MiB)\tPERSISTENT\tEPHEMERAL\tDEMAND\tCO-LOCATION\tTIMES")
			for _, p := range profiles {
				times := "measured"
				if p.Estimated {
					times = "estimated"
				}
				if cat.FromFile(p.Key()) {
					times = "catalog file"
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f\t%.1f\t%.0f\t%.0f\t%.0f\t%.2f\t%s\t%s\n", p.Model, p.Batch, p.Kind,
					p.IterS*1e3, p.StartupS, p.PeakMiB, p.PersistentMiB, p.EphemeralMiB, p.Demand,
					coLocationShort(coloc, interference.Job{Name: p.Model, Batch: p.Batch}), times)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(w, "\nWhere each figure comes from: salus models --format json (field \"source\"). CO-LOCATION: where the built-in\nco-location model's figures for the model come from on the p100 (salus interference show; docs/concepts.md).")
			return nil
		},
	}
	of.register(cmd, "o", "table", "json")
	addCatalogFlag(cmd, &catalogs)
	return cmd
}

// coLocationShort says in a word or two where d's figures for j come from:
// measured, mapped from a measured job (named), or estimated.
func coLocationShort(d *interference.DeviceModel, j interference.Job) string {
	src := d.SourceOf(j)
	switch {
	case strings.HasPrefix(src, "measured"):
		return "measured"
	case strings.HasPrefix(src, "mapped from "):
		return "from " + strings.Fields(strings.TrimPrefix(src, "mapped from "))[0]
	default:
		return "estimated"
	}
}
