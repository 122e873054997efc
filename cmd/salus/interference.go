package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/interference"
	"github.com/salusgo/salus/sim"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() { registerCommand(35, newInterferenceCmd) }

// addInterferenceFlag is --interference: the co-location model a run uses.
func addInterferenceFlag(f *pflag.FlagSet, p *string) {
	f.StringVar(p, "interference", interference.BuiltinName, "co-location model: how jobs side by side on one GPU slow each other: "+
		interference.BuiltinName+" (calibrated on published measured pairs: docs/concepts.md), a model file from salus interference fit, or "+
		interference.RuleName+" (one share per GPU by the jobs' demands, as before the measured model)")
}

// loadInterference is the model --interference names; nil for today's rule.
func loadInterference(name string) (*interference.Model, error) {
	m, err := interference.Named(name)
	if err != nil {
		return nil, fmt.Errorf("--interference: %w", err)
	}
	return m, nil
}

func newInterferenceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "interference",
		Short: "The co-location model: fit it to measured pairs of jobs sharing a GPU, predict pairs, show where its figures come from",
		Long: `How much slower than alone a job runs beside others on one GPU, per job and per device, for each way
of sharing compute (timeslice: processes under the driver's time-slicing; mps: CUDA MPS; lanes: Salus's
concurrent lanes). Fitted to measured pairs (a CSV of two jobs alone and side by side, the format of
Gavel's and Lucid's published measurements); used by every command that takes --interference.`,
	}
	cmd.AddCommand(newInterferenceFitCmd(), newInterferencePredictCmd(), newInterferenceShowCmd())
	return cmd
}

func parseMode(s string) (interference.Mechanism, error) {
	if s == "" {
		return "", nil
	}
	m, err := interference.ParseMechanism(s)
	if err != nil {
		return "", fmt.Errorf("--mode: %w", err)
	}
	return m, nil
}

func newInterferenceFitCmd() *cobra.Command {
	var (
		files []string
		dev   string
		mode  string
		out   string
		folds int
	)
	cmd := &cobra.Command{
		Use:   "fit --pairs FILE... --out MODEL",
		Short: "Fit the co-location model to measured pairs and print its error beside today's rule",
		Long: `Fit the co-location model to measured pairs: one model per GPU (the files' worker_type, or --device
alone), under --mode or, without it, the mechanism a pair file is taken to have run under: mps on the
v100 (Gavel's workers ran MPS on V100s only), timeslice elsewhere. The model's form and its rank are
chosen by cross-validation (folds by pair); the table gives, per job (each job's figure of each pair),
the median / p90 absolute error of normalized throughput in sample and cross-validated, beside today's
rule (one demand per job, fitted: 1/max(1, d_a + d_b) each) and "0.5 each".`,
		Example: `  salus interference fit --pairs ../shared/reference/colocation/gavel-p100.csv --out p100.json
  salus interference predict --model p100.json --pairs pairs.csv --out predicted.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return fmt.Errorf("give the measured pairs: --pairs FILE (repeatable)")
			}
			if out == "" {
				return fmt.Errorf("give the model's file: --out MODEL")
			}
			mech, err := parseMode(mode)
			if err != nil {
				return err
			}
			var pairs []interference.Pair
			var sources []string
			for _, f := range files {
				p, err := interference.ReadPairsFile(f)
				if err != nil {
					return fmt.Errorf("--pairs: %w", err)
				}
				pairs = append(pairs, p...)
				sources = append(sources, filepath.Base(f))
			}
			name := strings.TrimSuffix(filepath.Base(out), filepath.Ext(out))
			m, err := interference.FitPairs(name, "pair files "+strings.Join(sources, ", "), pairs, dev, mech, interference.FitOptions{Folds: folds})
			if err != nil {
				return err
			}
			if err := m.Save(out); err != nil {
				return err
			}
			return printFit(cmd.OutOrStdout(), m, out)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&files, "pairs", nil, "measured pairs (CSV: worker_type, job_a, batch_a, job_b, batch_b, normalized_a, normalized_b or alone_* and together_*); repeatable")
	f.StringVar(&dev, "device", "", "fit only the pairs of this worker_type (default: one model per worker_type in the files)")
	f.StringVar(&mode, "mode", "", "the mechanism the pairs ran under: timeslice, mps or lanes (default: mps on v100, timeslice elsewhere)")
	f.StringVar(&out, "out", "", "the model file to write (JSON)")
	f.IntVar(&folds, "folds", 5, "folds of the cross-validation")
	return cmd
}

func printFit(w io.Writer, m *interference.Model, out string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tMECHANISM\tPAIRS\tJOBS\tRANK\tMODEL in sample\tMODEL cross-val.\tRULE in sample\tRULE cross-val.\t0.5 EACH")
	for _, d := range m.Devices {
		e := d.Error
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%v\t%v\t%v\t%v\t%v\n", d.Device, d.Mechanism, e.Pairs, e.Jobs, d.Rank,
			e.Model.InSample, e.Model.CV, e.Rule.InSample, e.Rule.CV, e.Half.InSample)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nErrors: median / p90 absolute error of normalized throughput, per job; cross-validated over %d folds by pair.\nModel: %s\n",
		m.Devices[0].Error.Folds, out)
	return nil
}

// computeOf is how the device model shares compute under mech.
func computeOf(mech interference.Mechanism) core.ComputeSharing {
	if mech == interference.TimeSlicing {
		return core.TimeSliced
	}
	return core.ByDemand
}

func newInterferencePredictCmd() *cobra.Command {
	var (
		model, pairsFile, out, mode string
	)
	cmd := &cobra.Command{
		Use:   "predict --model MODEL --pairs FILE --out PRED.csv",
		Short: "Predict each pair's throughputs side by side, from the simulator's device model running the two jobs",
		Long: `For every row of a pair file (only worker_type, job_a, batch_a, job_b, batch_b are needed), write
worker_type,job_a,batch_a,job_b,batch_b,predicted_a,predicted_b: each job's throughput beside the other
over alone, as the simulator's device model runs the two jobs side by side under the model. Pairs that
were measured (in the model) come out as measured; others from the jobs' parameters, or those of the
measured job that stands in for one (salus interference show). Where the file holds measurements, the
error per job is printed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if model == "" || pairsFile == "" || out == "" {
				return fmt.Errorf("give --model MODEL (a file from salus interference fit, or %s), --pairs FILE and --out PRED.csv", interference.BuiltinName)
			}
			mech, err := parseMode(mode)
			if err != nil {
				return err
			}
			m, err := loadInterference(model)
			if err != nil || m == nil {
				if err == nil {
					err = fmt.Errorf("--model %s is today's rule, which has no per-job figures: give a model file or %s", model, interference.BuiltinName)
				}
				return err
			}
			pairs, err := interference.ReadPairsFile(pairsFile)
			if err != nil {
				return fmt.Errorf("--pairs: %w", err)
			}
			f, err := os.Create(out)
			if err != nil {
				return err
			}
			cw := csv.NewWriter(f)
			_ = cw.Write([]string{"worker_type", "job_a", "batch_a", "job_b", "batch_b", "predicted_a", "predicted_b"})
			var errs []float64
			notes := map[string]bool{}
			for _, p := range pairs {
				mm := mech
				if mm == "" {
					mm = interference.DefaultMechanism(p.WorkerType)
				}
				dm, note := m.ForDevice(p.WorkerType, mm)
				if dm == nil {
					f.Close()
					return fmt.Errorf("%s: line %d: the model has no pairs for %s nor %s", pairsFile, p.Line, p.WorkerType, interference.StandIn)
				}
				if note != "" && !notes[note] {
					notes[note] = true
					fmt.Fprintln(cmd.ErrOrStderr(), "note:", note)
				}
				dev, err := device.Preset(p.WorkerType)
				if err != nil {
					dev = device.DefaultDevice()
				}
				a, b := sim.PairRates(dm, computeOf(mm), dev, p.A, p.B)
				_ = cw.Write([]string{p.WorkerType, p.A.Name, strconv.Itoa(p.A.Batch), p.B.Name, strconv.Itoa(p.B.Batch),
					strconv.FormatFloat(a, 'f', 6, 64), strconv.FormatFloat(b, 'f', 6, 64)})
				if p.Measured {
					errs = append(errs, math.Abs(a-p.NormA), math.Abs(b-p.NormB))
				}
			}
			cw.Flush()
			if err := cw.Error(); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%d pairs predicted: %s\n", len(pairs), out)
			if len(errs) > 0 {
				s := interference.Summarize(errs)
				fmt.Fprintf(w, "against the file's measurements, per job: median %.3f, p90 %.3f, mean %.3f absolute error of normalized throughput\n", s.Median, s.P90, s.Mean)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&model, "model", "", "the co-location model: a file from salus interference fit, or "+interference.BuiltinName+" (the built-in one)")
	f.StringVar(&pairsFile, "pairs", "", "the pairs to predict (CSV with worker_type, job_a, batch_a, job_b, batch_b)")
	f.StringVar(&out, "out", "", "the predictions' CSV")
	f.StringVar(&mode, "mode", "", "the mechanism to predict under: timeslice, mps or lanes (default: mps on v100, timeslice elsewhere)")
	return cmd
}

func newInterferenceShowCmd() *cobra.Command {
	var (
		model, dev, mode string
		catalogs         []string
	)
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Show the model's devices and where each catalog model's co-location figures come from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := loadInterference(model)
			if err != nil {
				return err
			}
			if m == nil {
				return fmt.Errorf("--interference %s is today's rule: every job's demand, from the catalog (salus models)", model)
			}
			mech, err := parseMode(mode)
			if err != nil {
				return err
			}
			if mech == "" {
				mech = interference.Lanes
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "model %s: %s\n\n", m.Name, m.Form)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "DEVICE\tMECHANISM\tPAIRS\tJOBS\tRANK\tCROSS-VAL. ERROR\tSOURCE")
			for _, d := range m.Devices {
				cv := "-"
				if d.Error != nil {
					cv = d.Error.Model.CV.String()
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\n", d.Device, d.Mechanism, len(d.Measured), len(d.Jobs), d.Rank, cv, d.Source)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			dm, note := m.ForDevice(dev, mech)
			if dm == nil {
				return fmt.Errorf("the model has no pairs for %s nor %s", dev, interference.StandIn)
			}
			fmt.Fprintf(w, "\nThe catalog's models on %s under %s", dev, mech)
			if note != "" {
				fmt.Fprintf(w, " (%s)", note)
			}
			fmt.Fprintln(w, ":")
			cat, err := loadCatalog(catalogs)
			if err != nil {
				return err
			}
			tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "MODEL\tBATCH\tKIND\tBESIDE ITSELF\tPARAMETERS FROM")
			for _, p := range cat.Profiles() {
				j := interference.Job{Name: p.Model, Batch: p.Batch}
				self, _ := dm.PredictPair(j, j)
				fmt.Fprintf(tw, "%s\t%d\t%s\t%.2f\t%s\n", p.Model, p.Batch, p.Kind, self, dm.SourceOf(j))
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&model, "interference", interference.BuiltinName, "the co-location model: "+interference.BuiltinName+" (built in) or a model file")
	f.StringVar(&dev, "device", "p100", "the device whose figures the catalog's models take")
	f.StringVar(&mode, "mode", "lanes", "the mechanism: timeslice, mps or lanes")
	addCatalogFlag(cmd, &catalogs)
	return cmd
}
