package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/replay"
	"github.com/salusgo/salus/workload"
)

// liveFlags configure the live engine, for `salus replay` and `salus eval --engine live`.
type liveFlags struct {
	timeScale float64
	server    string
	serverLog string
}

func (l *liveFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Float64Var(&l.timeScale, "time-scale", 1, "live engine: multiply every time of the trace by this (0.01: a hundred times faster)")
	f.StringVar(&l.server, "server", "", "live engine: fast-path address of a running daemon (unix:/path or host:port); default: start one in this process")
	f.StringVar(&l.serverLog, "server-log", "", "live engine with --server: that daemon's event log (salus serve --events), to compute the results from")
}

// apply makes o run on the live engine. Without --policy and --mode it runs the
// paper's four policies; the live engine has Salus lanes and exclusive runs only.
func (l *liveFlags) apply(o *eval.TrainingOptions, policies, modes []string) error {
	if l.timeScale <= 0 {
		return fmt.Errorf("--time-scale %v: give a positive number", l.timeScale)
	}
	if l.server != "" && l.serverLog == "" {
		return errors.New("--server needs --server-log: the results come from that daemon's event log")
	}
	if len(policies) == 0 && len(modes) == 0 {
		s, err := eval.ResolveSchemes([]string{"fifo", "srtf", "pack", "fair"}, nil, o.Modes)
		if err != nil {
			return err
		}
		o.Schemes = s
	}
	if l.server != "" {
		o.Schemes = o.Schemes[:1] // one run: the report names the daemon's own policy
	}
	for _, s := range o.Schemes {
		if s.Mode != core.ModeSalus && s.Mode != core.ModeExclusive {
			return fmt.Errorf("the live engine runs Salus lanes and exclusive runs, not %q: drop --mode %s or use --engine sim", s.String(), s.Mode)
		}
	}
	o.Engine = "live"
	o.Runner = func(t *workload.Trace, s eval.Scheme, p core.Policy, outDir string) (eval.Run, error) {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		t = o.Device.Emulate(t) // the workers sleep the device's iteration times, not the P100's
		run := eval.Run{Scheme: s.String(), Policy: p.Name, Mode: p.Mode}
		ro := replay.Options{Policy: p, CapacityMiB: o.Device.CapacityMiB, TimeScale: l.timeScale, Output: os.Stderr}
		if l.server != "" {
			res, policy, err := replay.RunRemote(ctx, t, l.server, l.serverLog, ro)
			if policy != "" {
				run.Scheme, run.Policy = policy, policy
			}
			run.Result, run.Log = replay.Unscale(res, l.timeScale), l.serverLog
			return run, err
		}
		var file *eventlog.File
		if outDir != "" {
			run.Log = filepath.Join(outDir, "events-live-"+run.Scheme+".jsonl.gz")
			var err error
			if file, err = eventlog.Create(run.Log); err != nil {
				return run, err
			}
			ro.Log = file
		}
		res, err := replay.Run(ctx, t, ro)
		if file != nil {
			if cerr := file.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return run, fmt.Errorf("%s (live): %w", run.Scheme, err)
		}
		run.Result = replay.Unscale(res, l.timeScale)
		return run, nil
	}
	return nil
}

func newReplayCmd() *cobra.Command {
	ef := evalFlags{engine: "live", suite: "training"}
	cmd := &cobra.Command{
		Use:   "replay --trace FILE",
		Short: "Replay a trace on the live engine: the daemon and one worker process per job",
		Long: `Replay a trace on the live engine: a daemon (in this process, or --server) and one
worker process per job, launched at the job's arrival time, each running its iterations
for real (emulated: no GPU needed). Prints the same results table as the simulator,
computed from the live event log; --time-scale shrinks the trace for quick runs (the
table shows the trace's own times).

Same as: salus eval --engine live --trace FILE.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ef.tf.file == "" {
				return errors.New("--trace is required: give a trace file (salus trace generates one)")
			}
			rep, err := ef.run()
			if err != nil {
				return err
			}
			return printReport(cmd.OutOrStdout(), rep, ef.format)
		},
	}
	ef.tf.register(cmd)
	ef.df.register(cmd)
	ef.lf.register(cmd)
	f := cmd.Flags()
	f.StringArrayVar(&ef.policies, "policy", nil, "policy to run (repeatable; default: fifo, srtf, pack, fair)")
	f.StringArrayVar(&ef.modes, "mode", nil, "sharing mode (repeatable): exclusive or salus")
	f.StringVar(&ef.out, "out", "", "directory for event logs, results.json and results.csv")
	f.StringVar(&ef.format, "format", "table", "output format: table, json or csv")
	return cmd
}
