// Package live is the live engine: a salus daemon started in this process (or one
// already running) and worker processes launched against it, emulated jobs (salus
// worker) or real PyTorch ones (examples/*.py). Everything that starts a live
// daemon or a worker process goes through it: StartDaemon, Command, Launch.
//
// Run replays a trace: one emulated worker process per job, launched at the job's
// arrival time. The results come from the daemon's event log through the metrics
// package, exactly as for a simulated run.
//
// The in-process daemon emulates the chosen device (server.Config.Emulate): the
// workers do not sleep through their iterations, the simulator's device model says
// when each ends, so jobs in concurrent lanes slow each other down as they do in
// the simulator.
//
// It schedules nothing itself: the daemon decides, the workers obey.
package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/server"
	"github.com/salusgo/salus/workload"
)

// Options configure a live replay.
type Options struct {
	Policy core.Policy
	// Device is the GPU the in-process daemon emulates: its device model decides
	// when each iteration ends. Its speed matters only to jobs that give no
	// iteration time (the workers of Launch always give theirs, already on this
	// device: see device.Device.Emulate). The zero value is a device of speed 1.
	Device device.Device
	// CapacityMiB is the device memory to schedule; 0: Device.CapacityMiB.
	CapacityMiB float64
	// GPUs is how many GPUs of Device the in-process daemon's node has (0: one),
	// each emulated by its own device model, as the simulator's Options.GPUs;
	// GPUPlacement orders them for a job (nil: the core's default).
	GPUs         int
	GPUPlacement core.GPUPlacement
	// TimeScale multiplies every time of the trace (arrivals, iterations,
	// start-ups, declared times): 0.01 runs a trace a hundred times faster.
	TimeScale float64
	// Exe is the salus binary whose "worker" subcommand runs a job; default: this
	// process's own executable.
	Exe string
	// Env is added to the workers' environment.
	Env []string
	// Prelaunch starts each worker process this much before its arrival; the worker
	// opens its session at the arrival time itself, so process start-up does not
	// skew arrivals. Default 150 ms.
	Prelaunch time.Duration
	// Grace is the daemon's grace window (see server.Config); 0 keeps its default.
	Grace time.Duration
	// Log receives the live event log besides the metrics; nil: nowhere else.
	Log eventlog.Sink
	// LogPath, when not empty, is a file the in-process daemon writes its event
	// log to (see OpenLog).
	LogPath string
	// Output receives the workers' output; nil discards it.
	Output io.Writer
	// Logger for the in-process daemon; nil discards its logs.
	Logger *slog.Logger
	// OnStart is called with each worker process once it started.
	OnStart func(job string, p *os.Process)
	// OnExit is called when a worker process has ended, err saying how it failed.
	OnExit func(job string, err error)

	// arrivals, set by RunLive, tells Launch when the in-process daemon saw each
	// job arrive.
	arrivals *arrivals
}

// Live is the outcome of a live run on the in-process daemon.
type Live struct {
	metrics.Result
	// Emulation is what the daemon measured of its emulated device, notably the
	// per-iteration lag: how much later than the device model each iteration's end
	// was processed (the simulator's Device.IterOverheadS).
	Emulation server.EmulationStats
}

// Run replays t on an in-process daemon and returns the results computed from the
// live event log. A worker that fails does not stop the others; its job shows as
// lost and its error is returned, joined with the others', after all have ended.
func Run(ctx context.Context, t *workload.Trace, o Options) (metrics.Result, error) {
	l, err := RunLive(ctx, t, o)
	return l.Result, err
}

// RunLive is Run, and also returns what the daemon measured of its emulated device.
func RunLive(ctx context.Context, t *workload.Trace, o Options) (Live, error) {
	if o.TimeScale <= 0 {
		o.TimeScale = 1
	}
	if o.Prelaunch <= 0 {
		o.Prelaunch = 150 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.CapacityMiB <= 0 {
		o.CapacityMiB = o.Device.CapacityMiB
	}
	dev := o.Device
	if dev.Name == "" {
		dev.Name = "emulated GPU"
	}
	o.arrivals = newArrivals()
	var log eventlog.Sink = o.arrivals
	if o.Log != nil {
		log = eventlog.Sinks{o.Log, o.arrivals}
	}
	d, err := StartDaemon(DaemonConfig{Policy: o.Policy, CapacityMiB: o.CapacityMiB, GPUs: o.GPUs, GPUPlacement: o.GPUPlacement, Grace: o.Grace, Emulate: &dev,
		Trace: t.Name, Log: log, LogPath: o.LogPath, Logger: o.Logger})
	if err != nil {
		return Live{}, err
	}
	werr := Launch(ctx, t, d.FastAddr(), o)
	emu := d.Server.EmulationStats()
	res, err := d.Stop()
	return Live{Result: res, Emulation: emu}, errors.Join(werr, err)
}

// Unscale converts the times of a result measured on a trace shrunk by scale back
// to the trace's own time, so live runs at any scale compare with simulated ones.
func Unscale(r metrics.Result, scale float64) metrics.Result {
	if scale <= 0 || scale == 1 {
		return r
	}
	k := 1 / scale
	r.MakespanS *= k
	r.AvgJCTS *= k
	r.P95JCTS *= k
	r.AvgQueuingS *= k
	r.Completion = slices.Clone(r.Completion)
	for i := range r.Completion {
		j := &r.Completion[i]
		j.ArrivalS *= k
		j.ServiceS *= k
		j.EndS *= k
		j.JCTS *= k
		j.QueuingS *= k
		j.GPUS *= k
	}
	return r
}

// RunRemote replays t on a daemon already running at addr (its fast-path
// address) and computes the results from that daemon's event log at logPath
// (salus serve --events), keeping only the events of t's jobs. The daemon flushes
// its log every second, so RunRemote waits a little for the last events.
func RunRemote(ctx context.Context, t *workload.Trace, addr, logPath string, o Options) (metrics.Result, string, error) {
	ids := map[string]bool{}
	for _, j := range t.Jobs {
		ids[j.ID] = true
	}
	werr := Launch(ctx, t, addr, o)
	var (
		res    metrics.Result
		policy string
		err    error
	)
	for try := 0; try < 30; try++ { // up to 3 s for the daemon's periodic flush
		col := metrics.NewCollector()
		if prio := t.Priorities(); prio != nil {
			col.SetClasses(prio) // figures per priority class, as the simulator's runs give
		}
		ended := 0
		err = eventlog.ReadFile(logPath, func(e eventlog.Event) error {
			switch {
			case e.Kind == eventlog.Run:
				policy = e.Policy
			case e.Kind == eventlog.Memory:
			case ids[e.Job]:
				if e.Kind == eventlog.Finish || e.Kind == eventlog.Lost {
					ended++
				}
				col.Emit(e)
			}
			return nil
		})
		if err == nil && ended >= len(ids) {
			res, err = col.Result()
			break
		}
		if err == nil {
			err = fmt.Errorf("live: the daemon's log %s records the end of %d of the trace's %d jobs: is it the log of the daemon at %s?", logPath, ended, len(ids), addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return res, policy, errors.Join(werr, err)
}

// Overhead is what the live engine costs per iteration on this machine.
type Overhead struct {
	// RoundTrip is a worker process's per-iteration cycle: from the daemon's
	// grant, through the worker, to its end with next back at the daemon. An
	// iteration shorter than it is stretched to it.
	RoundTrip time.Duration
	// ReplyDelay is how late the emulating daemon answers at the device model's
	// end of an iteration (its timer's latency). It delays only the workers, so it
	// stretches only iterations shorter than it plus RoundTrip.
	ReplyDelay time.Duration
}

// MinIteration is the shortest iteration the live engine runs faithfully: 20
// round trips (so that the cycle stays a small share of the iteration, as it
// would were it not hidden), and at least twice the time the daemon takes to hear
// from a worker after an iteration's end (RoundTrip + ReplyDelay), below which
// iterations are stretched.
func (o Overhead) MinIteration() time.Duration {
	return max(20*o.RoundTrip, 2*(o.RoundTrip+o.ReplyDelay))
}

// MeasureOverhead measures the live engine's per-iteration overhead on this
// machine against an in-process daemon that emulates the GPU, with two worker
// processes (o.Exe, o.Env): one runs 200 iterations of 1 µs, so that every
// iteration's end waits for the worker's round trip; the other, arriving later,
// 30 iterations of 3 ms, long enough for the daemon to hold each end until its
// timer fires. It takes about half a second.
func MeasureOverhead(ctx context.Context, o Options) (Overhead, error) {
	p, err := core.Lookup("pack")
	if err != nil {
		return Overhead{}, err
	}
	job := func(id string, iters int, iterS, arrivalS float64) workload.Job {
		return workload.Job{ID: id, Iterations: iters, ArrivalS: arrivalS, Kind: workload.Train,
			Profile: &workload.Profile{Model: "probe", Kind: workload.Train, IterS: iterS, Demand: 1, PersistentMiB: 1, EphemeralMiB: 1}}
	}
	probe := &workload.Trace{Name: "overhead-probe", Jobs: []workload.Job{
		job("salus-probe-round-trip", 200, 1e-6, 0), job("salus-probe-reply", 30, 3e-3, 0.1)}}
	o.Policy, o.TimeScale, o.Log, o.LogPath, o.OnStart, o.OnExit, o.Output = p, 1, nil, "", nil, nil, nil
	o.CapacityMiB = max(o.CapacityMiB, 1024)
	l, err := RunLive(ctx, probe, o)
	if err != nil {
		return Overhead{}, fmt.Errorf("measuring the live engine's per-iteration overhead: %w", err)
	}
	st := l.Emulation
	if st.Lagged == 0 {
		return Overhead{}, errors.New("measuring the live engine's per-iteration overhead: no iteration waited for its worker")
	}
	return Overhead{RoundTrip: st.MeanLaggedBy(), ReplyDelay: st.MeanLate()}, nil
}
