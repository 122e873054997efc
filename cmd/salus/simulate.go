package main

import (
	"fmt"
	"io"
	"os"

	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/metrics"
	"github.com/spf13/cobra"
)

func init() { registerCommand(20, newSimulateCmd) }

func newSimulateCmd() *cobra.Command {
	var (
		tf     traceFlags
		df     deviceFlags
		pf     policyFlag
		cf     clusterFlags
		of     outputFlags
		events string
		jobs   string
		// perIteration asks for the log at the grain of iterations.
		perIteration bool
	)
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Simulate one trace under one policy and print its metrics",
		Long: `Simulate one trace (a file, or the generated trace of --trace-kind) under one policy in one sharing
mode and print its metrics: times in minutes as in salus eval, or --format json or csv
(the same fields as salus eval's, in seconds). salus eval and salus sweep run several
policies.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := of.check(); err != nil {
				return err
			}
			if err := tf.check(cmd.Flags()); err != nil {
				return err
			}
			if perIteration && events == "" {
				return fmt.Errorf("--per-iteration is the grain of the event log: give --events FILE too")
			}
			p, err := pf.lookup("simulate")
			if err != nil {
				return err
			}
			mode := pf.mode
			if mode == "" {
				mode = p.Mode
			}
			if err := df.checkModes(cmd.Flags(), []string{mode}); err != nil {
				return err
			}
			trace, err := tf.traceFor(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			dev, err := df.device()
			if err != nil {
				return err
			}
			cl, err := cf.load(cmd.Flags())
			if err != nil {
				return err
			}
			run, err := eval.SimulateOpts(trace, eval.Scheme{Mode: mode, Policy: p.Name}, df.modes, dev,
				eval.SimOptions{Log: events, PerIteration: perIteration, Cluster: cl})
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			info := eval.NewTraceInfo(trace)
			if tf.file == "" {
				info.Seed = tf.seed
			}
			rep := &eval.Report{Suite: "simulate", Engine: "sim", Trace: info,
				Device: dev, Modes: df.modes, Runs: []eval.Run{run}}
			// The run went through, so the trace fits the device: a bound exists
			// (on one node: none is computed for a cluster).
			if cl.Nodes == nil {
				_ = rep.SetBound(trace)
			}
			run = rep.Runs[0]
			if jobs != "" {
				if err := writeJobsCSV(jobs, rep); err != nil {
					return err
				}
			}
			if of.format != "table" {
				return printReport(w, rep, of.format)
			}
			fmt.Fprintf(w, "trace %s (%d jobs), %s (mode %s), device %s\n", trace.Name, len(trace.Jobs), run.Scheme, run.Mode, dev.Describe())
			if l := dev.CoLocationLine(); l != "" {
				fmt.Fprintln(w, l)
			}
			if cl.Nodes != nil {
				fmt.Fprintf(w, "cluster %s, node placement %s\n", describeCluster(cl.Nodes), cl.Placement)
			}
			fmt.Fprintf(w, "makespan      %10.1f min\navg JCT       %10.1f min\np95 JCT       %10.1f min\navg queuing   %10.1f min\nGPU busy      %10.1f %%\npeak memory   %10.0f MiB\n",
				run.MakespanS/60, run.AvgJCTS/60, run.P95JCTS/60, run.AvgQueuingS/60, run.GPUBusy*100, run.PeakMemoryMiB)
			if run.JainSlowdown > 0 {
				fmt.Fprintf(w, "Jain slowdown %10.3f   (Jain's index of the jobs' slowdowns; 1: all slowed alike)\nworst slowdown%10.2f x\n",
					run.JainSlowdown, run.MaxSlowdown)
			}
			if b := rep.Bound; b != nil {
				fmt.Fprintf(w, "JCT bound     %10.1f min   (lower bound on the average JCT: this run is %.2fx it)\nmakespan bound%10.1f min   (lower bound on the makespan: this run is %.2fx it)\n",
					b.AvgJCTS/60, run.JCTVsBound, b.MakespanS/60, run.MakespanVsBound)
			}
			printPerGPU(w, run.PerGPU)
			if events != "" {
				grain := "a stretch record per run of back-to-back iterations"
				if perIteration {
					grain = "every iteration"
				}
				fmt.Fprintf(w, "event log     %s (%s)\n", events, grain)
			}
			if jobs != "" {
				fmt.Fprintf(w, "jobs          %s\n", jobs)
			}
			return nil
		},
	}
	tf.register(cmd)
	df.register(cmd)
	pf.register(cmd, true)
	cf.register(cmd.Flags())
	of.register(cmd, "o", "table", "json", "csv")
	f := cmd.Flags()
	f.StringVar(&events, "events", "", "write the event log here (JSON Lines; gzip when the name ends in .gz)")
	deprecatedAlias(f, &events, "log", "", "events")
	f.StringVar(&jobs, "jobs", "", "write every job's result here, a CSV line each (as eval's jobs.csv: arrival, end, JCT, queuing, first service, GPUs), with no event log")
	f.BoolVar(&perIteration, "per-iteration", false, "with --events, log every iteration (an iter_end and an iter_start per boundary) instead of a stretch record per run of back-to-back iterations; the results are the same")
	return cmd
}

// writeJobsCSV writes rep's per-job results to path (eval's jobs.csv).
func writeJobsCSV(path string, rep *eval.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := rep.JobsCSV(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// perGPULines is how many GPUs the table lists one by one: a cluster of
// thousands gets a summary, and every GPU is in --format json.
const perGPULines = 16

func printPerGPU(w io.Writer, gpus []metrics.GPUResult) {
	if len(gpus) <= perGPULines {
		for _, g := range gpus {
			fmt.Fprintf(w, "GPU %-3d       %10d jobs, busy %.1f %%, peak memory %.0f MiB\n", g.GPU, g.Jobs, g.Busy*100, g.PeakMemoryMiB)
		}
		return
	}
	used, busiest := 0, gpus[0]
	for _, g := range gpus {
		if g.Jobs > 0 {
			used++
		}
		if g.Busy > busiest.Busy {
			busiest = g
		}
	}
	fmt.Fprintf(w, "GPUs used     %10d of %d   (busiest: GPU %d, busy %.1f %%; every GPU: --format json)\n", used, len(gpus), busiest.GPU, busiest.Busy*100)
}
