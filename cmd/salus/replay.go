package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/live"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/server"
	"github.com/salusgo/salus/workload"
)

// liveFlags configure the live engine, for `salus replay` and `salus eval --engine live`.
type liveFlags struct {
	timeScale float64
	server    string
	serverLog string
	// gpus and placement: the in-process daemon's node (salus replay --gpus).
	gpus      int
	placement string

	// Set by apply, for compare: where to warn and show progress, what was run and
	// what the daemon measured of each run.
	stderr   io.Writer
	trace    *workload.Trace
	device   device.Device
	modes    core.ModeParams
	emulated map[string]server.EmulationStats // by scheme, in-process runs only
	overhead *live.Overhead
}

func (l *liveFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Float64Var(&l.timeScale, "time-scale", 1, "live engine: multiply every time of the trace by this (0.01: a hundred times faster)")
	f.StringVar(&l.server, "server", "", "live engine: fast-path address of a running daemon (unix:/path or host:port); default: start one in this process, which emulates --device")
	f.StringVar(&l.serverLog, "server-log", "", "live engine with --server: that daemon's event log (salus serve --events), to compute the results from")
}

// apply makes o run on the live engine. Without --policy and --mode it runs the
// paper's four policies; the live engine has Salus lanes and exclusive runs only.
// Before the runs it measures the live engine's per-iteration overhead and warns
// when the time scale makes the trace's iterations too short for it.
func (l *liveFlags) apply(o *eval.TrainingOptions, policies, modes []string) error {
	if l.timeScale <= 0 {
		return fmt.Errorf("--time-scale %v: give a positive number", l.timeScale)
	}
	if l.server != "" && l.serverLog == "" {
		return errors.New("--server needs --server-log: the results come from that daemon's event log")
	}
	gp, err := l.node(o.Trace)
	if err != nil {
		return err
	}
	if l.stderr == nil {
		l.stderr = io.Discard
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
		fmt.Fprintf(l.stderr, "salus: warning: --server %s: that daemon's iterations agree with the simulator's under pack (lanes side by side) only if it runs with --emulate %s; otherwise its workers' iterations never slow each other down\n",
			l.server, strings.ToLower(o.Device.Name))
	}
	for _, s := range o.Schemes {
		if m, err := core.LookupMode(s.Mode); err != nil || !m.Live {
			return fmt.Errorf("the live engine runs only the modes it can carry (%s), not %q: drop --mode %s or use --engine sim", liveModes(), s.String(), s.Mode)
		}
	}
	l.trace, l.device, l.modes, l.emulated = o.Trace, o.Device, o.Modes, map[string]server.EmulationStats{}
	l.checkTimeScale(o.Trace, o.Device)
	o.Engine = "live"
	run := live.Runner(live.RunnerOptions{Device: o.Device, TimeScale: l.timeScale, Server: l.server, ServerLog: l.serverLog,
		Output: os.Stderr, Hook: l.progress, GPUs: l.gpus, GPUPlacement: gp})
	o.Runner = func(t *workload.Trace, s eval.Scheme, p core.Policy, outDir string) (eval.Run, error) {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		r := eval.Run{Scheme: s.String(), Policy: p.Name, Mode: p.Mode}
		out, err := run(ctx, t, r.Scheme, p, outDir)
		if out.Policy != "" {
			r.Scheme, r.Policy = out.Policy, out.Policy
		}
		r.Result, r.Log = out.Result, out.Log
		if out.Emulation != nil {
			l.emulated[r.Scheme] = *out.Emulation
		}
		return r, err
	}
	return nil
}

// checkTimeScale measures the live engine's per-iteration overhead (a probe of a
// fraction of a second) and warns when the time scale makes the trace's shortest
// iteration too short for it to be measured faithfully.
func (l *liveFlags) checkTimeScale(t *workload.Trace, dev device.Device) {
	var shortest *workload.Job
	for i, j := range t.Jobs {
		if j.Iterations > 0 && (shortest == nil || j.Profile.IterS < shortest.Profile.IterS) {
			shortest = &t.Jobs[i]
		}
	}
	if shortest == nil {
		return
	}
	ov, err := live.MeasureOverhead(context.Background(), live.Options{})
	if err != nil {
		fmt.Fprintf(l.stderr, "salus: warning: could not measure the live engine's overhead, so the time scale is not checked: %v\n", err)
		return
	}
	l.overhead = &ov
	iterS := dev.IterS(shortest.Profile.IterS) // in the trace's time, on the device
	liveIter := time.Duration(iterS * l.timeScale * float64(time.Second))
	need := ov.MinIteration()
	if liveIter >= need {
		return
	}
	enough := l.timeScale * need.Seconds() / liveIter.Seconds()
	fmt.Fprintf(l.stderr, "salus: warning: at --time-scale %g the trace's shortest iteration (%s: %s on the %s) takes %s live, "+
		"less than 20 times the live engine's per-iteration overhead measured on this machine (a worker's round trip, %s) "+
		"or twice that plus the daemon's reply delay (%s): the figures would then measure the daemon, not the policy. "+
		"--time-scale %s or more would be enough.\n",
		l.timeScale, shortest.Profile.Key(), fmtDur(iterS), dev.Name, liveIter.Round(time.Microsecond),
		ov.RoundTrip.Round(time.Microsecond), ov.ReplyDelay.Round(time.Microsecond), roundUp(enough))
}

// roundUp formats x rounded up to two significant digits.
func roundUp(x float64) string {
	if x <= 0 {
		return "0"
	}
	p := math.Pow(10, math.Floor(math.Log10(x))-1)
	return strconv.FormatFloat(math.Ceil(x/p)*p, 'g', 2, 64)
}

func fmtDur(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(10 * time.Microsecond).String()
}

// progress shows, on a terminal only, a bar of the jobs finished and the trace
// time elapsed while a live run goes; it hooks into o and returns what ends it.
func (l *liveFlags) progress(scheme string, jobs int, o *live.Options) func() {
	f, ok := l.stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return func() {}
	}
	bar := progressbar.NewOptions(jobs, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription(scheme),
		progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(false), progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(100*time.Millisecond))
	o.OnExit = func(string, error) { bar.Add(1) }
	start := time.Now()
	stop := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				trace := time.Duration(float64(time.Since(start)) / l.timeScale).Round(time.Second)
				bar.Describe(fmt.Sprintf("%s: trace time %s", scheme, trace))
			}
		}
	}()
	return func() {
		close(stop)
		<-ticked
		bar.Finish()
	}
}

// compare prints, after a live report, the simulator's figures for the same
// trace, schemes and device (what salus eval --engine sim prints) and how far the
// live run is from them.
func (l *liveFlags) compare(w io.Writer, rep *eval.Report) error {
	if l.trace == nil || len(rep.Runs) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nThe simulator on the same trace and device (salus eval --engine sim), and the live run's difference from it:\n\n")
	u := rep.Unit() // the live table's unit
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "scheme\tsim makespan (%[1]s)\tlive vs sim\tsim avg JCT (%[1]s)\tlive vs sim\tsim p95 JCT (%[1]s)\tlive vs sim\tcompletion order\tlag per iteration\t\n", u.Name)
	for _, run := range rep.Runs {
		sim, err := l.simulate(eval.Scheme{Mode: run.Mode, Policy: run.Policy})
		if err != nil {
			return err
		}
		lag := "-"
		if st, ok := l.emulated[run.Scheme]; ok {
			lag = fmt.Sprintf("%.1f µs", float64(st.MeanLag())/1e3)
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%s\t%.2f\t%s\t%.2f\t%s\t%s\t%s\t\n", run.Scheme,
			sim.MakespanS*u.Scale, pct(run.MakespanS, sim.MakespanS), sim.AvgJCTS*u.Scale, pct(run.AvgJCTS, sim.AvgJCTS),
			sim.P95JCTS*u.Scale, pct(run.P95JCTS, sim.P95JCTS), sameOrder(l.trace, run.Completion, sim.Completion), lag)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if l.overhead != nil {
		fmt.Fprintf(w, "\nLive engine on this machine: a worker's per-iteration round trip %s, the daemon's reply delay %s (a lag appears when an iteration is shorter than both together; the lag column is in live time).\n",
			l.overhead.RoundTrip.Round(time.Microsecond), l.overhead.ReplyDelay.Round(time.Microsecond))
	}
	return nil
}

func pct(live, sim float64) string {
	if sim == 0 {
		return "-"
	}
	d := 100 * (live/sim - 1)
	if math.Abs(d) < 0.05 {
		d = 0 // no "-0.0%"
	}
	return fmt.Sprintf("%+.1f%%", d)
}

// sameOrder says whether the jobs completed in the same order, or how many did not.
// Jobs that nothing tells apart (same arrival, model and iterations) count as
// the same job: a daemon at --server may take simultaneous arrivals in either
// order when other sessions open beside them.
func sameOrder(t *workload.Trace, live, sim []metrics.JobResult) string {
	if len(live) != len(sim) {
		return fmt.Sprintf("%d vs %d jobs", len(live), len(sim))
	}
	kind := map[string]string{}
	for _, j := range t.Jobs {
		kind[j.ID] = fmt.Sprintf("%g/%s/%d", j.ArrivalS, j.Profile.Key(), j.Iterations)
	}
	off := 0
	for i := range live {
		if kind[live[i].ID] != kind[sim[i].ID] {
			off++
		}
	}
	if off == 0 {
		return "same"
	}
	return fmt.Sprintf("%d of %d differ", off, len(live))
}

func newReplayCmd() *cobra.Command {
	ef := evalFlags{engine: "live", suite: "training"}
	cmd := &cobra.Command{
		Use:   "replay --trace FILE",
		Short: "Replay a trace on the live engine: the daemon and one worker process per job",
		Long: `Replay a trace on the live engine: a daemon (in this process, or --server) and one
worker process per job, launched at the job's arrival time. The daemon in this process
emulates --device (no GPU needed): it runs the simulator's device model on the wall clock,
so jobs in lanes side by side slow each other down by their compute demands, and each
worker only asks before every iteration and reports its end at once. Prints the same
results table as the simulator, computed from the live event log, then the simulator's
figures for the same trace, schemes and device and the live run's difference from them.
--time-scale shrinks the trace for quick runs (the tables show the trace's own times);
before the runs, a probe of a fraction of a second measures the live engine's
per-iteration overhead, and a warning says when the time scale makes the trace's shortest
iteration too short for it, and what time scale would be enough. On a terminal, a progress
bar shows the jobs finished and the trace time elapsed.

With --server the daemon there is used as it runs: pack agrees with the simulator only if
it was started with --emulate.

Same as: salus eval --engine live --trace FILE.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ef.tf.file == "" {
				return errors.New("--trace is required: give a trace file (salus trace generates one)")
			}
			// The live engine runs exclusive and Salus lanes only: the other modes'
			// parameters would change nothing.
			if err := ef.df.checkModes(cmd.Flags(), strings.Split(liveModes(), ", ")); err != nil {
				return err
			}
			// --gpus and --gpu-placement (the device flags): the node the daemon in
			// this process emulates, and the simulator compared with.
			ef.lf.gpus, ef.lf.placement = ef.df.gpus, ef.df.gpuPlacement
			ef.lf.stderr = cmd.ErrOrStderr()
			ef.progress = cmd.ErrOrStderr()
			rep, failed := ef.run()
			if rep == nil {
				return failed
			}
			if err := printLive(cmd.OutOrStdout(), rep, ef.format, &ef.lf); err != nil {
				return err
			}
			return failed
		},
	}
	// Only the trace file and its --load: the generator's --seed would do nothing.
	cmd.Flags().StringVar(&ef.tf.file, "trace", "", "trace file (CSV with a header, or JSON Lines; required)")
	addCatalogFlag(cmd, &ef.tf.catalogs)
	ef.tf.registerLoad(cmd)
	ef.df.register(cmd)
	ef.lf.register(cmd)
	ef.schemeFlags.register(cmd, nil, nil, "; default: fifo, srtf, pack, fair", "; the live engine runs exclusive and salus")
	ef.outputFlags.register(cmd, "o", "table", "json", "csv")
	addOutFlag(cmd.Flags(), &ef.out, "", "directory for event logs, results.json and results.csv")
	return cmd
}

// printLive prints a live report and, in a table, the simulator's figures beside it.
func printLive(w io.Writer, rep eval.Output, format string, lf *liveFlags) error {
	if err := printReport(w, rep, format); err != nil || format != "table" {
		return err
	}
	if r, ok := rep.(*eval.Report); ok {
		return lf.compare(w, r)
	}
	return nil
}

// liveModes lists the registered modes the live engine can carry.
func liveModes() string {
	var names []string
	for _, name := range core.ModeNames() {
		if m, err := core.LookupMode(name); err == nil && m.Live {
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}

// node checks salus replay's --gpus and --gpu-placement against the trace and
// returns the placement (nil: the default, for salus eval, which has no such flag).
func (l *liveFlags) node(t *workload.Trace) (core.GPUPlacement, error) {
	if l.gpus == 0 && l.placement == "" {
		return nil, nil
	}
	if l.gpus < 1 || l.gpus > server.MaxGPUs {
		return nil, fmt.Errorf("--gpus %d: give a count between 1 and %d", l.gpus, server.MaxGPUs)
	}
	if l.server != "" && l.gpus > 1 {
		return nil, fmt.Errorf("--gpus %d with --server: the running daemon has its own GPUs (salus serve --gpus); drop --gpus", l.gpus)
	}
	gp, err := core.LookupGPUPlacement(l.placement)
	if err != nil {
		return nil, fmt.Errorf("--gpu-placement: %v", err)
	}
	if t != nil {
		for _, j := range t.Jobs {
			if j.GPUCount() > l.gpus {
				return nil, fmt.Errorf("job %q of the trace needs %d GPUs at once and the node has %d: give --gpus %d or more", j.ID, j.GPUCount(), l.gpus, j.GPUCount())
			}
		}
	}
	return gp, nil
}

// simulate runs scheme s on the replayed trace in the simulator, on the same
// device and as many GPUs (the device carries them) as the live run had.
func (l *liveFlags) simulate(s eval.Scheme) (eval.Run, error) {
	return eval.Simulate(l.trace, s, l.modes, l.device, "")
}
