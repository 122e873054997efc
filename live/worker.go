package live

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/workload"
)

// WorkerFlags are the flags of `salus worker`: Register defines them on a flag
// set (the cobra command's), Worker builds the worker they describe.
type WorkerFlags struct {
	w           client.Worker
	model, kind string
	batch       int
	scale       float64
	iterS       float64
	startupS    float64
	openAt      int64
	pers, eph   float64
	declared    float64
	demand      float64
	pauseS      float64
	// afterFD orders the workers of simultaneous arrivals (Launch).
	afterFD int
	// fs is where Register defined the flags: Worker reads which were given.
	fs *pflag.FlagSet
}

// claimEnv is the environment the DRA driver's CDI edits set in a claim's
// container (k8s/dra.CDISpec) and the flag each stands for: a flag not given
// takes its value from there, so that a worker in a pod opens on the daemon's
// mounted socket, under its claim, with the claim's figures.
var claimEnv = []struct{ env, flag string }{
	{"SALUS_ADDR", "server"},
	{"SALUS_CLAIM", "claim"},
	{"SALUS_DECLARED_S", "declared-s"},
	{"SALUS_PRIORITY", "priority"},
	{"SALUS_PERSISTENT_MIB", "persistent-mib"},
	{"SALUS_EPHEMERAL_MIB", "ephemeral-mib"},
	{"SALUS_GPUS", "gpus"},
}

// fromEnv sets the flags not given from claimEnv.
func (f *WorkerFlags) fromEnv() error {
	if f.fs == nil {
		return nil
	}
	for _, e := range claimEnv {
		v := os.Getenv(e.env)
		if v == "" || f.fs.Changed(e.flag) {
			continue
		}
		if err := f.fs.Set(e.flag, v); err != nil {
			return fmt.Errorf("salus worker: $%s=%q: %v: fix the variable (the DRA driver sets it from the claim's configuration), or give --%s", e.env, v, err, e.flag)
		}
	}
	return nil
}

// Register defines the flags on fs.
func (f *WorkerFlags) Register(fs *pflag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.w.Addr, "server", client.DefaultAddr, "daemon fast-path address: unix:/path, a socket path, host:port, or auto (the default socket: salus serve's, see its --socket); $SALUS_ADDR when set and the flag is not (the DRA driver sets it in a claim's container)")
	fs.StringVar(&f.w.TokenFile, "token-file", "", "file holding the daemon's token, needed over TCP (default: $SALUS_TOKEN, else the file $SALUS_TOKEN_FILE names)")
	fs.StringVar(&f.w.Job, "job", "", "job name, unique among the daemon's sessions (required)")
	fs.StringVar(&f.model, "model", "", "catalog model whose profile to emulate (with --batch)")
	fs.IntVar(&f.batch, "batch", 0, "batch size of --model (default: the catalog's first for that model); sent at open, for the daemon's log")
	fs.StringVar(&f.w.Model, "model-name", "", "model name to report to the daemon, without a catalog look-up")
	fs.StringVar(&f.kind, "kind", "train", "train or infer")
	fs.IntVar(&f.w.Iterations, "iterations", 100, "iterations to run")
	fs.Float64Var(&f.scale, "time-scale", 1, "multiply the profile's times by this")
	fs.Float64Var(&f.iterS, "iter-s", 0, "seconds per iteration (overrides the profile); on a daemon that emulates the GPU, the iteration's standalone time on that device")
	fs.Float64Var(&f.demand, "demand", 0, "share of the GPU one iteration keeps busy alone, 0 to 1 (overrides the profile); what a daemon that emulates the GPU shares compute by")
	fs.Float64Var(&f.startupS, "startup-s", -1, "start-up seconds (overrides the profile)")
	fs.Float64Var(&f.pers, "persistent-mib", 0, "persistent memory, MiB (overrides the profile)")
	fs.Float64Var(&f.eph, "ephemeral-mib", 0, "ephemeral memory, MiB (overrides the profile)")
	fs.Float64Var(&f.declared, "declared-s", 0, "declared GPU time, seconds (default: iterations x iteration time; start-up excluded)")
	fs.IntVar(&f.w.Priority, "priority", 0, "priority")
	fs.Float64Var(&f.w.Share, "share", 0, "scheduling weight under the wfair and floor policies: the job's share of the GPU's time beside the others, 0.001 to 1000 (relative: 1 and 3 get time 1:3; default 1); not its compute demand (--demand)")
	fs.IntVar(&f.w.GPUs, "gpus", 1, "GPUs the job needs at once (more than one: a gang, given that many GPUs of the daemon's node together)")
	fs.StringVar(&f.w.Claim, "claim", "", "the Kubernetes claim (UID) the job runs under, which the daemon pins it to (default $SALUS_CLAIM, set by the DRA driver; the claim's secret is sent from $SALUS_CLAIM_SECRET, which the driver sets beside it). A flag not given takes $SALUS_DECLARED_S, $SALUS_PRIORITY, $SALUS_PERSISTENT_MIB, $SALUS_EPHEMERAL_MIB or $SALUS_GPUS when set; under a claim the daemon uses the claim's declared time, priority and share whatever the worker sends")
	fs.Int64Var(&f.openAt, "open-at", 0, "wall-clock time to open the session at, Unix nanoseconds (set by replay)")
	fs.Float64Var(&f.pauseS, "pause-s", 0, "inference: seconds between a request's end and the next request, holding no iteration (the trace's pause_s)")
	fs.IntVar(&f.afterFD, "after-fd", 0, "open the session only once this inherited file descriptor reads end of file (set by replay: the job that arrives at the same instant before it has arrived)")
}

// Worker builds the worker the parsed flags describe. A --model with --batch
// takes the job's profile from the catalog; explicit flags override it.
// --time-scale scales the profile's times, not explicit ones.
func (f *WorkerFlags) Worker(cat *workload.Catalog) (*client.Worker, error) {
	if err := f.fromEnv(); err != nil {
		return nil, err
	}
	w := f.w
	if w.Job == "" {
		return nil, fmt.Errorf("salus worker: --job is required")
	}
	w.Kind = f.kind
	w.BatchSize = max(f.batch, 0)
	if f.model != "" {
		p, err := lookup(cat, f.model, f.batch, f.kind)
		if err != nil {
			return nil, fmt.Errorf("salus worker: %w", err)
		}
		w.Model, w.BatchSize = p.Model, p.Batch
		w.IterS, w.StartupS = p.IterS*f.scale, p.StartupS*f.scale
		w.PersistentMiB, w.EphemeralMiB = p.PersistentMiB, p.EphemeralMiB
		w.Demand = p.Demand
	}
	if f.iterS > 0 {
		w.IterS = f.iterS
	}
	if f.demand < 0 || f.demand > 1 {
		return nil, fmt.Errorf("salus worker: --demand %v: give the share of the GPU one iteration keeps busy alone, above 0 and at most 1", f.demand)
	}
	if f.demand > 0 {
		w.Demand = f.demand
	}
	if f.startupS >= 0 {
		w.StartupS = f.startupS
	}
	if f.pers > 0 || f.eph > 0 {
		w.PersistentMiB, w.EphemeralMiB = f.pers, f.eph
	}
	if w.GPUs < 1 {
		return nil, fmt.Errorf("salus worker: --gpus %d: give how many GPUs the job needs at once, 1 or more", w.GPUs)
	}
	if w.IterS <= 0 {
		return nil, fmt.Errorf("salus worker: no iteration time: give --model (and --batch) or --iter-s")
	}
	w.DeclaredS = f.declared
	if w.DeclaredS == 0 {
		w.DeclaredS = float64(w.Iterations) * w.IterS
	}
	if f.openAt > 0 {
		w.OpenAt = time.Unix(0, f.openAt)
	}
	if f.pauseS < 0 {
		return nil, fmt.Errorf("salus worker: --pause-s %v: give a pause of 0 seconds or more", f.pauseS)
	}
	w.PauseS = f.pauseS
	if f.afterFD > 0 {
		after := os.NewFile(uintptr(f.afterFD), "after")
		w.BeforeOpen = func() {
			io.Copy(io.Discard, after) // until the job before has opened, or ended
			after.Close()
		}
	}
	return &w, nil
}

// ParseWorker parses the arguments of `salus worker` (without the subcommand
// name) and builds the worker they describe (see WorkerFlags.Worker).
func ParseWorker(args []string, cat *workload.Catalog) (*client.Worker, error) {
	fs := pflag.NewFlagSet("salus worker", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f WorkerFlags
	f.Register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("salus worker: %w\n%s", err, usage(fs))
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("salus worker: unexpected arguments %q\n%s", fs.Args(), usage(fs))
	}
	return f.Worker(cat)
}

// WorkerUsage describes the flags of `salus worker`.
func WorkerUsage() string {
	fs := pflag.NewFlagSet("salus worker", pflag.ContinueOnError)
	var f WorkerFlags
	f.Register(fs)
	return usage(fs)
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

func usage(fs *pflag.FlagSet) string {
	return "flags of salus worker:\n" + strings.TrimRight(fs.FlagUsages(), "\n") + "\n"
}
