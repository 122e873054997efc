package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/interference"
)

func init() { registerCommand(11, newFigureCmd) }

// newFigureCmd is salus figure: one of the paper's figures alone, as the paper
// suite runs it, with the paper's own values drawn on it.
func newFigureCmd() *cobra.Command {
	var (
		out, preset, model string
		seeds              int
		policies           []string
		reuse              bool
	)
	cmd := &cobra.Command{
		Use:   "figure NAME",
		Short: "Draw one of the paper's figures alone (table1, 7, 11), the paper's values on it, as PNG, SVG and CSV",
		Long: `Run the paper suite (salus eval --suite paper) and draw one of its figures alone,
with the paper's own values on it, into --out: NAME.png, NAME.svg and NAME.csv (every
value drawn: the series, ours or the paper's, the category, the value and, for ours
over seeds, the seeds' range).

Figures: table1 (Table 1's makespan, queuing, average and p95 JCT per policy: ours
as the median over the seeds with their range, beside the paper's), 7 (Fig. 7's JCT
distributions, every seed's jobs, with the points read from the paper's drawing:
FIFO's longest JCT and SRTF's median), 11 (Fig. 11's makespans of 300 jobs one by
one and under PACK, ours beside the paper's). --policy adds your schemes to table1
and 7, on the same seeds.`,
		Example: `  salus figure table1 --out results/table1
  salus figure 7 --policy las --seeds 5 --out results/fig7`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := eval.PaperOptions{Seeds: seeds}
			if preset != "" {
				dev, err := device.Preset(preset)
				if err != nil {
					return err
				}
				o.Device = dev
			} else {
				dev, err := device.Preset("p100")
				if err != nil {
					return err
				}
				o.Device = dev
			}
			var err error
			if o.Device.CoLocation, err = interference.Named(model); err != nil {
				return err
			}
			o.Device.CoLocationName = model
			if len(policies) > 0 {
				if o.Schemes, err = eval.ResolveSchemes(policies, nil, core.DefaultModeParams()); err != nil {
					return err
				}
			}
			if _, _, err := (&eval.PaperReport{}).Figure(args[0]); err != nil && strings.HasPrefix(err.Error(), "no figure") {
				return err
			}
			if out == "" {
				return fmt.Errorf("give --out DIR: the folder for %s.png, .svg and .csv", args[0])
			}
			if err := createOut(out, reuse); err != nil {
				return err
			}
			rep, err := eval.ReproducePaper(o)
			if err != nil {
				return err
			}
			fig, data, err := rep.Figure(args[0])
			if err != nil {
				return err
			}
			files, err := fig.Save(out)
			if err != nil {
				return err
			}
			name := filepath.Join(out, fig.Name+".csv")
			if err := writeFigureCSV(name, data); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Wrote %s and %s\n", strings.Join(files, ", "), name)
			return nil
		},
	}
	f := cmd.Flags()
	addOutFlag(f, &out, "", "directory for the figure (PNG, SVG) and its values (CSV)")
	addReuseOutFlag(f, &reuse)
	f.IntVar(&seeds, "seeds", eval.PaperSeeds, "seeds of the paper trace (1 to N) for table1 and 7")
	f.StringSliceVar(&policies, "policy", nil, "your policies, beside Table 1's on the same seeds (table1, 7)")
	addPolicyFileFlag(f)
	f.StringVar(&preset, "device", "", "device preset (default: the paper's P100)")
	addInterferenceFlag(f, &model)
	return cmd
}

// writeFigureCSV writes what a figure drew, one value a line.
func writeFigureCSV(path string, data []eval.FigureData) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"series", "category", "value", "low", "high"})
	num := func(x float64) string {
		if x != x {
			return ""
		}
		return strconv.FormatFloat(x, 'g', 8, 64)
	}
	for _, d := range data {
		w.Write([]string{d.Series, d.Category, num(d.Value), num(d.Low), num(d.High)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
