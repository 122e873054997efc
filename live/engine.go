package live

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/engine"
	"github.com/salusgo/salus/server"
	"github.com/salusgo/salus/workload"
)

// Engine is the live engine as an engine (package engine): each run replays the
// trace with one worker process per job against a daemon in this process, which
// emulates the run's device (and node: Device.GPUs), or against the running
// daemon at Server. Its runs share the machine, so they go one at a time. Its
// flags are its own (AddFlags).
type Engine struct {
	// TimeScale multiplies every time of the trace (see Options.TimeScale); the
	// results are converted back to the trace's own time. 0: 1.
	TimeScale float64
	// Server, when not empty, is a running daemon's fast-path address to run on
	// instead of an in-process one; ServerLog is its event log, which the results
	// are computed from.
	Server, ServerLog string
	// Exe and Env are the worker processes' program and added environment (see
	// Options).
	Exe string
	Env []string

	mu       sync.Mutex
	emulated map[string]server.EmulationStats // by scheme, in-process runs only
	overhead *Overhead
}

func init() { engine.Register(10, &Engine{TimeScale: 1}) }

// Name is "live".
func (*Engine) Name() string { return "live" }

// Description is one line for the help.
func (*Engine) Description() string {
	return "the daemon and real worker processes, one per job, on the wall clock"
}

// Serial: live runs share one machine.
func (*Engine) Serial() {}

// AddFlags defines --time-scale, --server and --server-log.
func (e *Engine) AddFlags(f *pflag.FlagSet) {
	f.Float64Var(&e.TimeScale, "time-scale", 1, "live engine: multiply every time of the trace by this (0.01: a hundred times faster)")
	f.StringVar(&e.Server, "server", "", "live engine: fast-path address of a running daemon (unix:/path or host:port); default: start one in this process, which emulates --device")
	f.StringVar(&e.ServerLog, "server-log", "", "live engine with --server: that daemon's event log (salus serve --events), to compute the results from")
}

// CheckFlags checks the flags' values.
func (e *Engine) CheckFlags() error {
	if !(e.TimeScale > 0) || math.IsInf(e.TimeScale, 0) {
		return fmt.Errorf("--time-scale %v: give a positive number", e.TimeScale)
	}
	if e.Server != "" && e.ServerLog == "" {
		return fmt.Errorf("--server needs --server-log: the results come from that daemon's event log")
	}
	return nil
}

// Accepts refuses the modes the daemon cannot carry out (core.Mode.Live).
func (*Engine) Accepts(p core.Policy) error {
	m, err := core.LookupMode(p.Mode)
	if err != nil {
		return err
	}
	if !m.Live {
		return fmt.Errorf("the live engine runs only the modes it can carry (%s), not %q: drop --mode %s or use --engine sim",
			strings.Join(Modes(), ", "), m.SchemeLabel(p.Name), p.Mode)
	}
	return nil
}

// Modes lists the registered modes the live engine can carry out.
func Modes() []string {
	var names []string
	for _, name := range core.ModeNames() {
		if m, err := core.LookupMode(name); err == nil && m.Live {
			names = append(names, name)
		}
	}
	return names
}

// Plan checks the node against the trace and, with Server, keeps one run (the
// report names the daemon's own policy). Before the runs it measures the live
// engine's per-iteration overhead and warns when the time scale makes the
// trace's iterations too short for it.
func (e *Engine) Plan(t *workload.Trace, dev device.Device, ps []core.Policy, warn io.Writer) ([]core.Policy, error) {
	if err := e.CheckFlags(); err != nil {
		return nil, err
	}
	if warn == nil {
		warn = io.Discard
	}
	gpus := max(dev.GPUs, 1)
	if gpus > server.MaxGPUs {
		return nil, fmt.Errorf("--gpus %d: give a count between 1 and %d", gpus, server.MaxGPUs)
	}
	if e.Server != "" && gpus > 1 {
		return nil, fmt.Errorf("--gpus %d with --server: the running daemon has its own GPUs (salus serve --gpus); drop --gpus", gpus)
	}
	if _, err := core.LookupGPUPlacement(dev.GPUPlacement); err != nil {
		return nil, fmt.Errorf("--gpu-placement: %v", err)
	}
	if t != nil {
		for _, j := range t.Jobs {
			if j.GPUCount() > gpus {
				return nil, fmt.Errorf("job %q of the trace needs %d GPUs at once and the node has %d: give --gpus %d or more", j.ID, j.GPUCount(), gpus, j.GPUCount())
			}
		}
	}
	if e.Server != "" && len(ps) > 1 {
		ps = ps[:1]
	}
	if e.Server != "" {
		fmt.Fprintf(warn, "salus: warning: --server %s: that daemon's iterations agree with the simulator's under pack (lanes side by side) only if it runs with --emulate %s; otherwise its workers' iterations never slow each other down\n",
			e.Server, strings.ToLower(dev.Name))
	}
	e.mu.Lock()
	e.emulated = map[string]server.EmulationStats{}
	e.mu.Unlock()
	if t != nil {
		e.checkTimeScale(t, dev, warn)
	}
	return ps, nil
}

// checkTimeScale measures the live engine's per-iteration overhead (a probe of a
// fraction of a second) and warns when the time scale makes the trace's shortest
// iteration too short for it to be measured faithfully.
func (e *Engine) checkTimeScale(t *workload.Trace, dev device.Device, warn io.Writer) {
	var shortest *workload.Job
	for i, j := range t.Jobs {
		if j.Iterations > 0 && (shortest == nil || j.Profile.IterS < shortest.Profile.IterS) {
			shortest = &t.Jobs[i]
		}
	}
	if shortest == nil {
		return
	}
	ov, err := MeasureOverhead(context.Background(), Options{Exe: e.Exe, Env: e.Env})
	if err != nil {
		fmt.Fprintf(warn, "salus: warning: could not measure the live engine's overhead, so the time scale is not checked: %v\n", err)
		return
	}
	e.mu.Lock()
	e.overhead = &ov
	e.mu.Unlock()
	scale := e.scale()
	iterS := dev.IterS(shortest.Profile.IterS) // in the trace's time, on the device
	liveIter := time.Duration(iterS * scale * float64(time.Second))
	need := ov.MinIteration()
	if liveIter >= need {
		return
	}
	enough := scale * need.Seconds() / liveIter.Seconds()
	fmt.Fprintf(warn, "salus: warning: at --time-scale %g the trace's shortest iteration (%s: %s on the %s) takes %s live, "+
		"less than 20 times the live engine's per-iteration overhead measured on this machine (a worker's round trip, %s) "+
		"or twice that plus the daemon's reply delay (%s): the figures would then measure the daemon, not the policy. "+
		"--time-scale %s or more would be enough.\n",
		scale, shortest.Profile.Key(), fmtDur(iterS), dev.Name, liveIter.Round(time.Microsecond),
		ov.RoundTrip.Round(time.Microsecond), ov.ReplyDelay.Round(time.Microsecond), roundUp(enough))
}

func (e *Engine) scale() float64 {
	if e.TimeScale <= 0 {
		return 1
	}
	return e.TimeScale
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

// Run replays r.Trace: its workers against an in-process daemon that emulates
// r.Device (its GPUs the node's), writing its event log to r.LogPath when set,
// or against the daemon at Server. The results are in the trace's own time. The
// workers' output goes to r.Output, where a progress bar shows on a terminal.
// r.Sink is not fed: the live events are in live time.
func (e *Engine) Run(ctx context.Context, r engine.Run) (engine.Outcome, error) {
	var out engine.Outcome
	if r.Cluster != nil {
		return out, fmt.Errorf("the live engine runs one node: a cluster (%s) runs in the simulator (--engine sim)", r.Cluster.Source)
	}
	scale := e.scale()
	t := r.Device.Emulate(r.Trace) // the workers declare the device's iteration times, not the P100's
	gp, err := core.LookupGPUPlacement(r.Device.GPUPlacement)
	if err != nil {
		return out, fmt.Errorf("--gpu-placement: %v", err)
	}
	ro := Options{Policy: r.Policy, Device: r.Device, CapacityMiB: r.Device.CapacityMiB, TimeScale: scale, Output: r.Output,
		GPUs: r.Device.GPUs, GPUPlacement: gp, Exe: e.Exe, Env: e.Env}
	scheme := r.Scheme
	if scheme == "" {
		scheme = r.Policy.Name
	}
	done := progress(r.Output, scheme, len(t.Jobs), scale, &ro)
	defer done()
	if e.Server != "" {
		res, policy, err := RunRemote(ctx, t, e.Server, e.ServerLog, ro)
		out.Result, out.Policy, out.Log = Unscale(res, scale), policy, e.ServerLog
		return out, err
	}
	ro.LogPath = r.LogPath
	out.Log = r.LogPath
	l, err := RunLive(ctx, t, ro)
	if err != nil {
		return out, fmt.Errorf("(live): %w", err)
	}
	out.Result = Unscale(l.Result, scale)
	e.mu.Lock()
	if e.emulated == nil {
		e.emulated = map[string]server.EmulationStats{}
	}
	e.emulated[scheme] = l.Emulation
	e.mu.Unlock()
	return out, nil
}

// Column, Note and Footnote say, beside a comparison with the simulator, what
// the daemon measured: each run's mean lag per iteration, and this machine's
// per-iteration overhead.
func (*Engine) Column() string { return "lag per iteration" }

// Note is the run's mean lag per iteration, in live time ("-": not measured).
func (e *Engine) Note(scheme string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if st, ok := e.emulated[scheme]; ok {
		return fmt.Sprintf("%.1f µs", float64(st.MeanLag())/1e3)
	}
	return "-"
}

// Footnote is the live engine's per-iteration overhead measured before the runs.
func (e *Engine) Footnote() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.overhead == nil {
		return ""
	}
	return fmt.Sprintf("Live engine on this machine: a worker's per-iteration round trip %s, the daemon's reply delay %s (a lag appears when an iteration is shorter than both together; the lag column is in live time).",
		e.overhead.RoundTrip.Round(time.Microsecond), e.overhead.ReplyDelay.Round(time.Microsecond))
}

// progress shows, on a terminal only, a bar of the jobs finished and the trace
// time elapsed while a live run goes; it hooks into o and returns what ends it.
func progress(w io.Writer, scheme string, jobs int, scale float64, o *Options) func() {
	f, ok := w.(*os.File)
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
				trace := time.Duration(float64(time.Since(start)) / scale).Round(time.Second)
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
