package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/interference"
	"github.com/salusgo/salus/provenance"
	"github.com/salusgo/salus/report"
	"github.com/salusgo/salus/sweep"
	"github.com/salusgo/salus/workload"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

func init() { registerCommand(60, newSweepCmd) }

func newSweepCmd() *cobra.Command {
	var (
		g       sweep.Grid
		sf      schemeFlags
		seeds   int
		out     string
		reuse   bool // --reuse-out
		resume  string
		workers int
		shard   string
		gpus    string
		cf      clusterFlags
		po      sweep.PlotOptions
	)
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Run a grid of simulations over seeds and report means with 95% confidence intervals",
		Long: `Run every policy x sharing mode x load x device memory, each over several seeds
of a generated trace (--trace-kind: salus100 by default, or the paper's; a new
trace per seed, as salus trace gen --kind KIND --seed SEED makes it), in
parallel on all cores. Reports each metric as the mean and its 95% confidence
interval across seeds, a BCa bootstrap of the mean that never reaches below the
smallest seed's value (docs/comparing.md says why), and writes sweep.csv,
sweep.json, sweep-METRIC.png/.svg and index.html (the table, the
recommendations and the plots on one page) to --out. Each figure draws one
metric against load, or a bar per scheme with its interval when the sweep has
one load; its axis is logarithmic when the values drawn span more than 10x.
--metrics and --schemes choose what is drawn. After the table, a paragraph per
trace, load and capacity says which scheme is best on makespan, average and p95
JCT and fairness (Jain's index of the jobs' slowdowns), by how much, and
whether the lead is clear of zero seed by seed (the same bootstrap, of the
per-seed differences).

--trace FILE (repeatable) sweeps your own traces instead: each --load divides
the file's arrival times (2: twice as fast), and each seed draws a trace from
the file by --resample: bootstrap (as many jobs, drawn with replacement, in
arrival order, copies renamed ID#2...), jitter (the same jobs, each gap between
arrivals times a factor drawn from [0.5, 1.5)) or none (the file as it is; one
seed only). The default is bootstrap with several seeds, none with one.

Finished runs are appended to DIR/samples.jsonl as they complete: Ctrl-C keeps
and reports them, and --resume DIR runs only what is missing.

On a cluster, --shard I/N runs the I-th of N shares of the grid's runs (run k, in
grid order, is shard k mod N's), for instance as a Kubernetes Indexed Job
(deploy/sweep-indexed-job.yaml: I from JOB_COMPLETION_INDEX); salus sweep merge
then combines the shards' directories into the outputs of one sweep.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var done []sweep.Sample
			if g.Interference == interference.RuleName {
				g.Interference = "" // today's rule: the grid file as before the flag
			}
			if resume != "" {
				for _, name := range []string{"policy", "mode", "seeds", "load", "capacity-mib", "device", "gpus", "jobs", "out", "catalog", "trace", "trace-kind", "resample", "shard", "admission", "starve-factor", "migrate", "cluster", "node-placement", "interference"} {
					if cmd.Flags().Changed(name) {
						return fmt.Errorf("--resume takes the grid from %s/%s: leave out --%s", resume, sweep.GridFile, name)
					}
				}
				var err error
				if g, done, err = sweep.Load(resume); err != nil {
					return err
				}
				out = resume
			} else {
				g.Policies, g.Modes = sf.policies, sf.modes
				var err error
				if g.GPUs, err = gpuCount(gpus); err != nil {
					return err
				}
				if err := sweepCluster(cmd.Flags(), &g, cf); err != nil {
					return err
				}
				for i, f := range g.Catalogs { // the grid file keeps them for --resume, from anywhere
					if abs, err := filepath.Abs(f); err == nil {
						g.Catalogs[i] = abs
					}
				}
				if seeds < 1 {
					return fmt.Errorf("--seeds %d: need at least 1", seeds)
				}
				g.Seeds = nil
				for s := 1; s <= seeds; s++ {
					g.Seeds = append(g.Seeds, int64(s))
				}
				if err := sweepTraces(cmd, &g, seeds); err != nil {
					return err
				}
				if len(g.CapacitiesMiB) == 0 {
					dev, err := device.Preset(g.Device)
					if err != nil {
						return err
					}
					g.CapacitiesMiB = []float64{dev.CapacityMiB}
				}
			}
			if g.GPUs == 1 {
				g.GPUs = 0 // one GPU: the grid file reads as before
			}
			if shard != "" {
				sh, err := sweep.ParseShard(shard)
				if err != nil {
					return fmt.Errorf("--shard: %w", err)
				}
				g.Shard = sh
			}
			if err := sweep.Check(g); err != nil {
				return err
			}
			if err := po.Check(g.Cells(sweep.Applicable)); err != nil {
				return err
			}
			if err := sweepProvenance(cmd, &g, resume); err != nil {
				return err
			}
			// A resumed sweep writes into its own folder.
			return runSweep(cmd, g, done, out, workers, reuse || resume != "", po)
		},
	}
	f := cmd.Flags()
	sf.register(cmd, []string{"fifo", "srtf", "pack", "fair"}, []string{sweep.DefaultMode}, "", `, or "default": each policy in its own`)
	f.IntVar(&seeds, "seeds", 10, "seeds per cell (1..N)")
	f.StringSliceVar(&g.Admissions, "admission", nil, "orders of admission to compare, a grid dimension: "+strings.Join(core.AdmissionOrders, ", ")+" (default: arrival alone; see docs/concepts.md, \"Admission in the policy's order\")")
	f.StringSliceVar(&g.Migrations, "migrate", nil, "migration settings to compare, a grid dimension: off, on (off,on: both, seed by seed); on: a job waiting for its turn moves to an idle GPU of its node at its iteration boundary, paying the copy of its persistent memory (default: off alone)")
	f.Float64Var(&g.StarveFactor, "starve-factor", 0, "with --admission policy: K, a job may be passed over only during its first K x its declared GPU time of waiting (0: the default, "+strconv.FormatFloat(core.DefaultStarveFactor, 'g', -1, 64)+")")
	f.Float64SliceVar(&g.Loads, "load", []float64{0.5, 1, 1.5}, "arrival-rate multipliers")
	f.Float64SliceVar(&g.CapacitiesMiB, "capacity-mib", nil, "device memory capacities in MiB (default: the preset's)")
	addPresetFlag(f, &g.Device, "device preset")
	addInterferenceFlag(f, &g.Interference)
	f.IntVar(&g.Jobs, "jobs", 100, "jobs per generated trace (with --trace, only with --trace-kind)")
	f.StringSliceVar(&g.TraceKinds, "trace-kind", nil, "generated traces to sweep, a grid dimension: "+strings.Join(workload.Kinds(), ", ")+" (salus trace gen --kind; default: salus100, none with --trace)")
	f.StringArrayVar(&g.Traces, "trace", nil, "trace file to sweep instead of the generated trace (repeatable); --load divides its arrival times")
	f.StringVar(&g.Resample, "resample", "", "with --trace: how each seed draws a trace from the file: "+strings.Join(workload.ResampleMethods, ", ")+" (default: bootstrap with several seeds, none with one)")
	addGPUsFlag(f, &gpus, false, " (of each run's node, placed least-loaded)")
	cf.register(f)
	addCatalogFlag(cmd, &g.Catalogs)
	addOutFlag(f, &out, "sweep-out", "directory for samples.jsonl, sweep.csv, sweep.json and the plots")
	addReuseOutFlag(f, &reuse)
	f.StringVar(&resume, "resume", "", "continue the sweep in this directory")
	f.IntVar(&workers, "workers", runtime.NumCPU(), "parallel runs")
	f.StringVar(&shard, "shard", "", "I/N: run the I-th of N shares of the grid's runs (0 <= I < N); salus sweep merge combines the shards")
	addPlotFlags(f, &po)
	cmd.AddCommand(newSweepMergeCmd())
	return cmd
}

// sweepProvenance records in the grid where its results come from. A resumed
// sweep must run the build and read the inputs (traces, model) it began with:
// its samples are one sweep's; its record then lists each command that ran it.
func sweepProvenance(cmd *cobra.Command, g *sweep.Grid, resume string) error {
	p := provenance.New(commandLine(cmd, nil))
	if err := sweep.Inputs(*g, &p); err != nil {
		return err
	}
	if resume != "" && g.Provenance != nil {
		if err := sweep.SameSweep(g.Provenance, &p); err != nil {
			return fmt.Errorf("--resume %s: the sweep began as %q, and %v since: start a new sweep (another --out), or resume with what it began with",
				resume, strings.Join(g.Provenance.Command, " "), err)
		}
		p.Parts = g.Provenance.Parts
		if len(p.Parts) == 0 {
			p.Parts = [][]string{g.Provenance.Command}
		}
		p.Parts = append(p.Parts, p.Command)
	}
	g.Provenance = &p
	return nil
}

// sweepTraces checks the flags of a sweep over trace files, and chooses the
// resampling method when none is given.
func sweepTraces(cmd *cobra.Command, g *sweep.Grid, seeds int) error {
	fs := cmd.Flags()
	if len(g.Traces) == 0 {
		if fs.Changed("resample") {
			return fmt.Errorf("--resample draws from --trace files; each seed of the generated trace is a new trace already: drop it")
		}
		return nil
	}
	if fs.Changed("jobs") && len(g.TraceKinds) == 0 {
		return fmt.Errorf("--jobs sizes the generated trace; with --trace the file's jobs run: drop it (or add --trace-kind to sweep generated traces beside the files)")
	}
	if g.Resample == "" {
		g.Resample = workload.ResampleNone
		if seeds > 1 {
			g.Resample = workload.ResampleBootstrap
		}
	}
	if len(g.TraceKinds) == 0 {
		g.Jobs = 0
	}
	return nil
}

// addPlotFlags adds --metrics and --schemes, what a sweep's figures draw.
func addPlotFlags(f *pflag.FlagSet, po *sweep.PlotOptions) {
	f.StringSliceVar(&po.Metrics, "metrics", nil, "metrics to draw, a figure each: "+strings.Join(sweep.Metrics, ", ")+" (default: all; the tables keep every metric)")
	f.StringSliceVar(&po.Schemes, "schemes", nil, "schemes to draw: a policy (srtf) or policy/mode as the table shows it (fifo/mps) (default: all)")
}

func runSweep(cmd *cobra.Command, g sweep.Grid, done []sweep.Sample, out string, workers int, reuse bool, po sweep.PlotOptions) error {
	cells := g.Cells(sweep.Applicable)
	if len(cells) == 0 {
		return fmt.Errorf("no policy runs under the modes %v", g.Modes)
	}
	tasks := g.Tasks(cells, done)
	if err := createOut(out, reuse); err != nil {
		return err
	}
	if err := sweep.WriteGrid(out, g); err != nil {
		return err
	}
	journal, err := sweep.OpenJournal(out)
	if err != nil {
		return err
	}
	defer journal.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	planned := len(done) + len(tasks)
	var bar *progressbar.ProgressBar
	if f, ok := cmd.ErrOrStderr().(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions(planned, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription("sweep"),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())
		bar.Set(len(done))
	}
	var journalErr error
	start := time.Now()
	samples, runErr := sweep.Run(ctx, tasks, workers, sweep.SimRunner(g), func(s sweep.Sample) {
		if err := journal.Add(s); err != nil && journalErr == nil {
			journalErr = err
		}
		if bar != nil {
			bar.Add(1)
		}
	})
	stop()
	if bar != nil {
		bar.Finish()
	}
	if journalErr != nil {
		return fmt.Errorf("recording finished runs in %s: %w", out, journalErr)
	}
	all := append(done, samples...)
	interrupted := errors.Is(runErr, context.Canceled)
	res := sweep.Result{Grid: g, Runs: len(all), Planned: planned, Interrupted: interrupted}
	if err := writeSweep(cmd, out, &res, cells, all, po); err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "\n%d runs (%d this time, %.1f s, %d workers); wrote %s, %s, sweep-*.png/svg and index.html to %s\n",
		len(all), len(samples), time.Since(start).Seconds(), workers, sweep.CSVFile, sweep.JSONFile, out)
	if g.Shard != nil {
		fmt.Fprintf(w, "shard %s of the grid: combine the shards' directories with salus sweep merge\n", g.Shard)
	}
	if interrupted {
		return fmt.Errorf("interrupted: %d of %d runs done and kept; continue with: salus sweep --resume %s", len(all), planned, out)
	}
	return nil
}

// writeSweep summarizes the samples of cells into res and writes sweep.json,
// sweep.csv, the plots and index.html to out, then prints the table.
func writeSweep(cmd *cobra.Command, out string, res *sweep.Result, cells []sweep.Cell, all []sweep.Sample, po sweep.PlotOptions) error {
	res.Cells = sweep.SummarizeCells(cells, all)
	res.Recommendations = sweep.Recommend(res.Cells, all)
	res.Interval = res.IntervalNote()
	if err := sweep.WriteResults(out, *res); err != nil {
		return err
	}
	plotted, err := sweep.Plot(out, res.Cells, po)
	if err != nil {
		return err
	}
	if _, err := report.WriteSweep(report.SweepOptions{Dir: out, Result: *res, Figures: plotted,
		Args: append([]string{"salus"}, os.Args[1:]...), Version: moduleVersion()}); err != nil {
		return err
	}
	printSweep(cmd.OutOrStdout(), *res)
	return nil
}

// newSweepMergeCmd is salus sweep merge: the shards of a sweep, as one.
func newSweepMergeCmd() *cobra.Command {
	var (
		out   string
		reuse bool // --reuse-out
		po    sweep.PlotOptions
	)
	cmd := &cobra.Command{
		Use:   "merge DIR...",
		Short: "Combine the directories of a sweep's shards (sweep --shard I/N) into the outputs of one sweep",
		Long: `Read the directories that salus sweep --shard I/N wrote for each shard of one grid, check
that they hold the same grid and, together, every run of it, and write to --out what one
salus sweep over the whole grid writes: sweep.json, sweep.csv, the plots and index.html.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			g, all, err := sweep.Merge(dirs, sweep.Applicable)
			if err != nil {
				return err
			}
			if err := po.Check(g.Cells(sweep.Applicable)); err != nil {
				return err
			}
			if g.Provenance != nil { // the merge's command; the shards' are its parts
				g.Provenance.Command = commandLine(cmd, dirs)
			}
			if err := createOut(out, reuse); err != nil {
				return err
			}
			if err := sweep.WriteGrid(out, g); err != nil {
				return err
			}
			res := sweep.Result{Grid: g, Runs: len(all), Planned: len(all)}
			if err := writeSweep(cmd, out, &res, g.Cells(sweep.Applicable), all, po); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "\n%d runs from %d directories; wrote %s, %s, sweep-*.png/svg and index.html to %s\n",
				len(all), len(dirs), sweep.CSVFile, sweep.JSONFile, out)
			return nil
		},
	}
	addOutFlag(cmd.Flags(), &out, "sweep-merged", "directory for the merged sweep's outputs")
	addReuseOutFlag(cmd.Flags(), &reuse)
	addPlotFlags(cmd.Flags(), &po)
	return cmd
}

func printSweep(w io.Writer, r sweep.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "trace\tpolicy\tmode\tload\tGiB\tGPUs\truns\t")
	for _, c := range sweep.Columns {
		fmt.Fprintf(tw, "%s\t", c.Head)
	}
	several := r.Grid.SeveralGPUs()
	if several {
		fmt.Fprint(tw, "busy per GPU (%)\t")
	}
	fmt.Fprintln(tw)
	gpus := r.Grid.GPUsLabel()
	for _, c := range r.Cells {
		runs := fmt.Sprint(c.Runs)
		if c.Failed > 0 {
			runs += fmt.Sprintf(" (%d failed)", c.Failed)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%g\t%.1f\t%s\t%s\t", c.TraceName(), c.Policy, c.ModeName(), c.Load, c.CapacityMiB/1024, gpus, runs)
		for _, col := range sweep.Columns {
			fmt.Fprintf(tw, "%s\t", col.Show(c.Metrics[col.Key]))
		}
		if several {
			fmt.Fprintf(tw, "%s\t", c.BusyPerGPU())
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%s\n", eval.Wrap(r.IntervalNote(), 100))
	traces := len(r.Grid.Traces) > 0
	if traces && r.Grid.Resample != workload.ResampleNone {
		fmt.Fprintf(w, "each seed runs a %s resample of the trace file (see docs/traces.md, What if)\n", r.Grid.Resample)
	}
	several = len(r.Grid.Traces)+len(r.Grid.TraceKinds) > 1 || traces
	for _, rec := range r.Recommendations {
		where := fmt.Sprintf("load %g, %.1f GiB", rec.Load, rec.CapacityMiB/1024)
		if g := r.Grid.GPUsLabel(); g != "1" {
			where += ", GPUs " + g
		}
		if several {
			where = rec.TraceName() + ", " + where
		}
		fmt.Fprintf(w, "\n%s\n", eval.Wrap(where+": "+rec.Text, 100))
	}
}

// sweepCluster puts --cluster and --node-placement in the grid: the file by its
// absolute path (the grid file keeps it for --resume). A cluster's GPUs have
// their nodes' memory: --capacity-mib would change none of them.
func sweepCluster(fs *pflag.FlagSet, g *sweep.Grid, cf clusterFlags) error {
	cl, err := cf.load(fs)
	if err != nil || cl.Nodes == nil {
		return err
	}
	if fs.Changed("capacity-mib") {
		return fmt.Errorf("--cluster %s gives each GPU its node's memory: leave out --capacity-mib", cf.file)
	}
	g.Cluster, g.NodePlacement = cf.file, cf.placement
	if abs, err := filepath.Abs(cf.file); err == nil {
		g.Cluster = abs
	}
	return nil
}
