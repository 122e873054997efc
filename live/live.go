// Package replay runs a trace on the live engine: a salus daemon (started in this
// process, or one already running) and one worker process per job, launched at the
// job's arrival time. The results come from the daemon's event log through the
// metrics package, exactly as for a simulated run.
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
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/salusgo/salus/client"
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
	// Output receives the workers' output; nil discards it.
	Output io.Writer
	// Logger for the in-process daemon; nil discards its logs.
	Logger *slog.Logger
	// OnStart is called with each worker process once it started.
	OnStart func(job string, p *os.Process)
	// OnExit is called when a worker process has ended, err saying how it failed.
	OnExit func(job string, err error)
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
	col := metrics.NewCollector()
	sinks := eventlog.Sinks{col}
	if o.Log != nil {
		sinks = append(sinks, o.Log)
	}
	if o.CapacityMiB <= 0 {
		o.CapacityMiB = o.Device.CapacityMiB
	}
	dev := o.Device
	if dev.Name == "" {
		dev.Name = "emulated GPU"
	}
	srv, err := server.New(server.Config{Policy: o.Policy, CapacityMiB: o.CapacityMiB, Grace: o.Grace,
		Log: &lockedSink{s: sinks}, Logger: o.Logger, Trace: t.Name, Emulate: &dev})
	if err != nil {
		return Live{}, err
	}
	dir, err := os.MkdirTemp("", "salus-replay-")
	if err != nil {
		srv.Shutdown()
		return Live{}, err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "salus.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		srv.Shutdown()
		return Live{}, fmt.Errorf("replay: listen on %s: %w", sock, err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeFast(l) }()
	werr := Launch(ctx, t, "unix:"+sock, o)
	emu := srv.EmulationStats()
	srv.Shutdown()
	if err := <-served; err != nil {
		werr = errors.Join(werr, err)
	}
	res, err := col.Result()
	return Live{Result: res, Emulation: emu}, errors.Join(werr, err)
}

// lockedSink serializes events: the metrics collector is not safe for concurrent use.
type lockedSink struct {
	mu sync.Mutex
	s  eventlog.Sink
}

func (l *lockedSink) Emit(e eventlog.Event) {
	l.mu.Lock()
	l.s.Emit(e)
	l.mu.Unlock()
}

// Launch starts one worker process per job of t against the daemon at addr, each
// at its (scaled) arrival time, and waits for all of them.
func Launch(ctx context.Context, t *workload.Trace, addr string, o Options) error {
	if o.TimeScale <= 0 {
		o.TimeScale = 1
	}
	exe := o.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("replay: cannot find this program to run workers: %w; pass the salus binary", err)
		}
	}
	out := o.Output
	if out == nil {
		out = io.Discard
	}
	jobs := slices.Clone(t.Jobs)
	slices.SortStableFunc(jobs, func(a, b workload.Job) int {
		switch {
		case a.ArrivalS < b.ArrivalS:
			return -1
		case a.ArrivalS > b.ArrivalS:
			return 1
		}
		return 0
	})
	t0 := time.Now().Add(o.Prelaunch)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	outMu := &sync.Mutex{}
	for _, j := range jobs {
		openAt := t0.Add(time.Duration(j.ArrivalS * o.TimeScale * float64(time.Second)))
		select {
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		case <-time.After(time.Until(openAt.Add(-o.Prelaunch))):
		}
		cmd := exec.CommandContext(ctx, exe, append([]string{"worker"}, WorkerArgs(j, addr, o.TimeScale, openAt)...)...)
		cmd.Env = append(os.Environ(), o.Env...)
		cmd.Stdout = &syncWriter{mu: outMu, w: out}
		cmd.Stderr = cmd.Stdout
		if err := cmd.Start(); err != nil {
			mu.Lock()
			errs = append(errs, fmt.Errorf("job %s: start worker %s: %w", j.ID, exe, err))
			mu.Unlock()
			continue
		}
		if o.OnStart != nil {
			o.OnStart(j.ID, cmd.Process)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := cmd.Wait()
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("job %s: worker: %w", j.ID, err))
				mu.Unlock()
			}
			if o.OnExit != nil {
				o.OnExit(j.ID, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

type syncWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// WorkerArgs are the arguments of `salus worker` that run job j, its times scaled.
// They carry the profile's compute demand, for a daemon that emulates the GPU.
func WorkerArgs(j workload.Job, addr string, scale float64, openAt time.Time) []string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	p := j.Profile
	args := []string{
		"--server", addr, "--job", j.ID, "--iterations", strconv.Itoa(j.Iterations),
		"--persistent-mib", f(p.PersistentMiB), "--ephemeral-mib", f(p.EphemeralMiB),
		"--iter-s", f(p.IterS * scale), "--startup-s", f(p.StartupS * scale),
		"--declared-s", f(j.Declared() * scale),
	}
	if p.Demand > 0 {
		args = append(args, "--demand", f(p.Demand))
	}
	if p.Model != "" {
		args = append(args, "--model-name", p.Model)
	}
	if j.Priority != 0 {
		args = append(args, "--priority", strconv.Itoa(j.Priority))
	}
	if j.Kind != "" {
		args = append(args, "--kind", j.Kind)
	}
	if !openAt.IsZero() {
		args = append(args, "--open-at", strconv.FormatInt(openAt.UnixNano(), 10))
	}
	return args
}

// ParseWorker parses the arguments of `salus worker` (without the subcommand
// name). A --model with --batch takes the job's profile from the catalog; explicit
// flags override it. --time-scale scales the profile's times, not explicit ones.
func ParseWorker(args []string, cat *workload.Catalog) (*client.Worker, error) {
	w, _, err := parseWorker(args, cat)
	return w, err
}

// WorkerUsage describes the flags of `salus worker`.
func WorkerUsage() string {
	_, fs, _ := parseWorker(nil, nil)
	return usage(fs)
}

func parseWorker(args []string, cat *workload.Catalog) (*client.Worker, *flag.FlagSet, error) {
	fs := flag.NewFlagSet("salus worker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	w := &client.Worker{}
	var (
		model, kind string
		batch       int
		scale       float64
		iterS       float64
		startupS    float64
		openAt      int64
		pers, eph   float64
		declared    float64
		demand      float64
	)
	fs.StringVar(&w.Addr, "server", "unix:/tmp/salus.sock", "daemon fast-path address: unix:/path or host:port")
	fs.StringVar(&w.TokenFile, "token-file", "", "file holding the daemon's token, needed over TCP (default: $SALUS_TOKEN, else the file $SALUS_TOKEN_FILE names)")
	fs.StringVar(&w.Job, "job", "", "job name, unique among the daemon's sessions (required)")
	fs.StringVar(&model, "model", "", "catalog model whose profile to emulate (with --batch)")
	fs.IntVar(&batch, "batch", 0, "batch size of --model (default: the catalog's first for that model)")
	fs.StringVar(&w.Model, "model-name", "", "model name to report to the daemon, without a catalog look-up")
	fs.StringVar(&kind, "kind", "train", "train or infer")
	fs.IntVar(&w.Iterations, "iterations", 100, "iterations to run")
	fs.Float64Var(&scale, "time-scale", 1, "multiply the profile's times by this")
	fs.Float64Var(&iterS, "iter-s", 0, "seconds per iteration (overrides the profile); on a daemon that emulates the GPU, the iteration's standalone time on that device")
	fs.Float64Var(&demand, "demand", 0, "share of the GPU one iteration keeps busy alone, 0 to 1 (overrides the profile); what a daemon that emulates the GPU shares compute by")
	fs.Float64Var(&startupS, "startup-s", -1, "start-up seconds (overrides the profile)")
	fs.Float64Var(&pers, "persistent-mib", 0, "persistent memory, MiB (overrides the profile)")
	fs.Float64Var(&eph, "ephemeral-mib", 0, "ephemeral memory, MiB (overrides the profile)")
	fs.Float64Var(&declared, "declared-s", 0, "declared GPU time, seconds (default: iterations x iteration time; start-up excluded)")
	fs.IntVar(&w.Priority, "priority", 0, "priority")
	fs.Int64Var(&openAt, "open-at", 0, "wall-clock time to open the session at, Unix nanoseconds (set by replay)")
	if cat == nil {
		return nil, fs, nil
	}
	if err := fs.Parse(args); err != nil {
		return nil, fs, fmt.Errorf("salus worker: %w\n%s", err, usage(fs))
	}
	if fs.NArg() > 0 {
		return nil, fs, fmt.Errorf("salus worker: unexpected arguments %q\n%s", fs.Args(), usage(fs))
	}
	if w.Job == "" {
		return nil, fs, fmt.Errorf("salus worker: --job is required\n%s", usage(fs))
	}
	w.Kind = kind
	if model != "" {
		p, err := lookup(cat, model, batch, kind)
		if err != nil {
			return nil, fs, fmt.Errorf("salus worker: %w", err)
		}
		w.Model = p.Model
		w.IterS, w.StartupS = p.IterS*scale, p.StartupS*scale
		w.PersistentMiB, w.EphemeralMiB = p.PersistentMiB, p.EphemeralMiB
		w.Demand = p.Demand
	}
	if iterS > 0 {
		w.IterS = iterS
	}
	if demand < 0 || demand > 1 {
		return nil, fs, fmt.Errorf("salus worker: --demand %v: give the share of the GPU one iteration keeps busy alone, above 0 and at most 1", demand)
	}
	if demand > 0 {
		w.Demand = demand
	}
	if startupS >= 0 {
		w.StartupS = startupS
	}
	if pers > 0 || eph > 0 {
		w.PersistentMiB, w.EphemeralMiB = pers, eph
	}
	if w.IterS <= 0 {
		return nil, fs, fmt.Errorf("salus worker: no iteration time: give --model (and --batch) or --iter-s")
	}
	w.DeclaredS = declared
	if w.DeclaredS == 0 {
		w.DeclaredS = float64(w.Iterations) * w.IterS
	}
	if openAt > 0 {
		w.OpenAt = time.Unix(0, openAt)
	}
	return w, fs, nil
}

// lookup finds a profile by model and batch; batch 0 takes the first listed.
func lookup(cat *workload.Catalog, model string, batch int, kind string) (workload.Profile, error) {
	if batch > 0 {
		return cat.Lookup(model, batch, kind)
	}
	for _, p := range cat.Profiles() {
		if p.Model == model && (p.Kind == kind || kind == "") {
			return p, nil
		}
	}
	return cat.Lookup(model, batch, kind)
}

func usage(fs *flag.FlagSet) string {
	var b = &stringsBuilder{}
	fs.SetOutput(b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	return "flags of salus worker:\n" + b.String()
}

type stringsBuilder struct{ b []byte }

func (s *stringsBuilder) Write(p []byte) (int, error) { s.b = append(s.b, p...); return len(p), nil }
func (s *stringsBuilder) String() string              { return string(s.b) }

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
			err = fmt.Errorf("replay: the daemon's log %s records the end of %d of the trace's %d jobs: is it the log of the daemon at %s?", logPath, ended, len(ids), addr)
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
			Profile: workload.Profile{Model: "probe", Kind: workload.Train, IterS: iterS, Demand: 1, PersistentMiB: 1, EphemeralMiB: 1}}
	}
	probe := &workload.Trace{Name: "overhead-probe", Jobs: []workload.Job{
		job("salus-probe-round-trip", 200, 1e-6, 0), job("salus-probe-reply", 30, 3e-3, 0.1)}}
	o.Policy, o.TimeScale, o.Log, o.OnStart, o.OnExit, o.Output = p, 1, nil, nil, nil, nil
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
