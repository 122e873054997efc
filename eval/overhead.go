package eval

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/engine"
	"github.com/salusgo/salus/live"
	"github.com/salusgo/salus/metrics"
)

// The overhead suite on the live engine with PyTorch workers: what running a real
// training job under the daemon costs per iteration, and a short live trace of real
// jobs under several policies.

// OverheadOptions configure the overhead suite.
type OverheadOptions struct {
	// Worker is the kind of worker processes: "pytorch" (the default, and the
	// only one: the real jobs of examples/).
	Worker  string
	PyTorch live.PyTorch
	// Models are the example models to measure; default cnn, resnet18, mlp.
	Models []string
	// Iterations per run (default 40), of which the first Warmup (default 5) are
	// left out of the medians. Each run alternates blocks of Block iterations
	// (default 1) under the daemon and without it, in one process; Reps runs
	// (default 3).
	Iterations, Warmup, Reps, Block int
	// TracePolicies are the policies of the live trace; default fifo, srtf, fair.
	// NoTrace skips the trace.
	TracePolicies []string
	NoTrace       bool
	// CapacityMiB is the daemon's device memory; default 16384.
	CapacityMiB float64
	// OutDir, when set, receives the trace's event logs (trace-POLICY.jsonl).
	OutDir string
	// Progress receives a line per run; nil: nowhere.
	Progress io.Writer
}

// OverheadRow is one model's figures.
type OverheadRow struct {
	Model string `json:"model"`
	// AloneS and DaemonS are the medians, over repetitions, of each run's median
	// iteration time after warm-up, seconds: without the daemon (the session idle)
	// and under it (begin and end round trips included).
	AloneS  float64 `json:"alone_s"`
	DaemonS float64 `json:"daemon_s"`
	// Ratio and AddedUS are the medians, over Pairs pairs of neighbouring
	// iterations (one under the daemon, the next without it), of their time ratio
	// and difference (microseconds). Pairing cancels the machine's slow drift.
	Ratio   float64 `json:"ratio"`
	AddedUS float64 `json:"added_us"`
	Pairs   int     `json:"pairs"`
	// AloneRuns and DaemonRuns are each repetition's median.
	AloneRuns  []float64 `json:"alone_runs_s"`
	DaemonRuns []float64 `json:"daemon_runs_s"`
	// WaitUS is the median time the daemon held the job back at begin.
	WaitUS float64 `json:"wait_us"`
	// RoundTripRatio is 1 + the empty-step round trip / AloneS: the ratio the
	// client's own cost implies, free of the run-to-run noise of the model's time.
	RoundTripRatio float64 `json:"round_trip_ratio"`
}

// TraceJob is one job of the live PyTorch trace.
type TraceJob struct {
	ID         string  `json:"id"`
	Model      string  `json:"model"`
	Iterations int     `json:"iterations"`
	ArrivalS   float64 `json:"arrival_s"`
	// DeclaredS is the declared GPU time (what SRTF uses); 0 leaves it out.
	DeclaredS float64 `json:"declared_s"`
}

// TraceRun is one policy's live run of the trace.
type TraceRun struct {
	Policy string         `json:"policy"`
	Result metrics.Result `json:"result"`
	// Order is the jobs' completion order.
	Order []string `json:"order"`
	// Loss is each job's first and last loss.
	Loss map[string][2]float64 `json:"loss"`
	// Memory is, on CUDA, each job's peak reserved memory and its lane size, MiB.
	Memory map[string][2]float64 `json:"memory,omitempty"`
	// CapsHeld is false when a job's peak exceeded its lane (CUDA only).
	CapsHeld bool `json:"caps_held"`
}

// OverheadReport is the suite's output.
type OverheadReport struct {
	Suite      string        `json:"suite"`
	Engine     string        `json:"engine"`
	Worker     string        `json:"worker"`
	Iterations int           `json:"iterations"`
	Warmup     int           `json:"warmup"`
	Reps       int           `json:"reps"`
	Block      int           `json:"block"`
	Rows       []OverheadRow `json:"models"`
	// RoundTripUS and RoundTripP99US are an empty iteration's time under the
	// daemon (examples/roundtrip.py): what the daemon adds to every iteration.
	RoundTripUS    float64    `json:"round_trip_us"`
	RoundTripP99US float64    `json:"round_trip_p99_us"`
	Trace          []TraceJob `json:"trace,omitempty"`
	TraceRuns      []TraceRun `json:"trace_runs,omitempty"`
}

func (o *OverheadOptions) defaults() {
	if len(o.Models) == 0 {
		o.Models = []string{"cnn", "resnet18", "mlp"}
	}
	if o.Iterations <= 0 {
		o.Iterations = 40
	}
	if o.Block <= 0 {
		o.Block = 1
	}
	if o.Warmup < 0 || o.Warmup >= o.Iterations {
		o.Warmup = 0
	} else if o.Warmup == 0 {
		o.Warmup = min(5, o.Iterations/2)
	}
	if o.Reps <= 0 {
		o.Reps = 3
	}
	if len(o.TracePolicies) == 0 {
		o.TracePolicies = []string{"fifo", "srtf", "fair"}
	}
	if o.CapacityMiB <= 0 {
		o.CapacityMiB = 16384
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
}

// Overhead runs the suite: every model alone and under a live daemon, Reps times,
// then (unless NoTrace) a short trace of real jobs under each trace policy.
func Overhead(ctx context.Context, o OverheadOptions) (*OverheadReport, error) {
	o.defaults()
	if err := o.PyTorch.Available(); err != nil {
		return nil, err
	}
	rep := &OverheadReport{Suite: "overhead", Engine: "live", Worker: "pytorch", Iterations: o.Iterations, Warmup: o.Warmup, Reps: o.Reps, Block: o.Block}
	fair, _ := core.Lookup("fair")
	d, err := live.StartDaemon(live.DaemonConfig{Policy: fair, CapacityMiB: o.CapacityMiB})
	if err != nil {
		return nil, err
	}
	defer d.Stop()
	rt, err := o.PyTorch.RunJob(ctx, "roundtrip", "roundtrip.py", "--iterations", "2000", "--quiet", "--salus", d.Addr, "--job", "roundtrip")
	if err != nil {
		return nil, err
	}
	rep.RoundTripUS, rep.RoundTripP99US = rt.Done.MedianS*1e6, rt.Done.P99S*1e6
	fmt.Fprintf(o.Progress, "overhead: empty iteration under the daemon %.0f us (p99 %.0f us)\n", rep.RoundTripUS, rep.RoundTripP99US)
	for _, model := range o.Models {
		row := OverheadRow{Model: model}
		var waits, ratios, diffs []float64
		for r := 0; r < o.Reps; r++ {
			// One process per repetition, alternating blocks of iterations under the
			// daemon and without it, so both see the same machine at the same time.
			job := fmt.Sprintf("overhead-%s-%d", model, r)
			out, err := o.PyTorch.RunJob(ctx, job, "train.py", "--model", model, "--iterations", fmt.Sprint(o.Iterations),
				"--seed", fmt.Sprint(r), "--salus", d.Addr, "--job", job, "--alternate", fmt.Sprint(o.Block))
			if err != nil {
				return nil, err
			}
			var alone, under []float64
			its := out.Iters[min(o.Warmup, len(out.Iters)):]
			for k, it := range its {
				if !it.Gated {
					alone = append(alone, it.S)
					continue
				}
				under = append(under, it.S)
				if it.WaitUS != nil {
					waits = append(waits, *it.WaitUS)
				}
				// Pair it with the iteration one block later, which ran without the daemon.
				if k+o.Block < len(its) && !its[k+o.Block].Gated {
					a := its[k+o.Block].S
					ratios = append(ratios, it.S/a)
					diffs = append(diffs, (it.S-a)*1e6)
				}
			}
			if len(alone) == 0 || len(under) == 0 {
				return nil, fmt.Errorf("overhead %s: %d iterations alone and %d under the daemon after warm-up: raise --iterations", model, len(alone), len(under))
			}
			a, u := median(alone), median(under)
			row.AloneRuns = append(row.AloneRuns, a)
			row.DaemonRuns = append(row.DaemonRuns, u)
			fmt.Fprintf(o.Progress, "overhead %s rep %d: alone %.2f ms, under the daemon %.2f ms\n", model, r+1, a*1e3, u*1e3)
		}
		row.AloneS, row.DaemonS = median(row.AloneRuns), median(row.DaemonRuns)
		row.Ratio, row.AddedUS, row.Pairs = median(ratios), median(diffs), len(ratios)
		row.WaitUS = median(waits)
		row.RoundTripRatio = 1 + rep.RoundTripUS/1e6/row.AloneS
		rep.Rows = append(rep.Rows, row)
	}
	if o.NoTrace {
		return rep, nil
	}
	// The trace: three jobs of the measured models; declared times from the alone runs.
	iterS := map[string]float64{}
	for _, r := range rep.Rows {
		iterS[r.Model] = r.AloneS
	}
	rep.Trace = DefaultPyTorchTrace(o.Models, iterS)
	for _, name := range o.TracePolicies {
		pol, err := core.Lookup(name)
		if err != nil {
			return nil, err
		}
		logPath := ""
		if o.OutDir != "" {
			logPath = filepath.Join(o.OutDir, "trace-"+pol.Name+".jsonl")
		}
		run, err := RunPyTorchTrace(ctx, o.PyTorch, rep.Trace, TraceDaemon{Policy: pol, CapacityMiB: o.CapacityMiB, LogPath: logPath})
		if err != nil {
			return nil, fmt.Errorf("live trace under %s: %w", pol.Name, err)
		}
		fmt.Fprintf(o.Progress, "trace %s: completion order %s\n", pol.Name, strings.Join(run.Order, ", "))
		rep.TraceRuns = append(rep.TraceRuns, *run)
	}
	return rep, nil
}

// DefaultPyTorchTrace is a short trace of real jobs: a long job first, then two
// shorter ones arriving behind it, so fifo, srtf and fair order them differently.
// iterS gives each model's standalone iteration time for the declared totals.
func DefaultPyTorchTrace(models []string, iterS map[string]float64) []TraceJob {
	pick := func(i int) string { return models[i%len(models)] }
	jobs := []TraceJob{
		{ID: "long", Model: pick(0), Iterations: 30, ArrivalS: 0},
		{ID: "medium", Model: pick(1), Iterations: 15, ArrivalS: 0.2},
		{ID: "short", Model: pick(2), Iterations: 6, ArrivalS: 0.4},
	}
	for i := range jobs {
		jobs[i].DeclaredS = float64(jobs[i].Iterations) * iterS[jobs[i].Model]
	}
	return jobs
}

// TraceDaemon is the daemon a PyTorch trace runs under.
type TraceDaemon struct {
	Policy      core.Policy
	CapacityMiB float64
	// LogPath, when set, receives the daemon's event log.
	LogPath string
	// Grace is the daemon's grace window (server.Config.Grace); 0 keeps its
	// default. A test of the policy's order on a busy machine gives a long one, so
	// that a worker slow to ask for its next iteration still gets it: the order is
	// then the policy's, not the machine's.
	Grace time.Duration
}

// RunPyTorchTrace runs jobs as real PyTorch processes under a daemon: every
// process starts up first, then each opens its session at its arrival time. It
// returns the results computed from the live event log.
func RunPyTorchTrace(ctx context.Context, p live.PyTorch, jobs []TraceJob, o TraceDaemon) (*TraceRun, error) {
	d, err := live.StartDaemon(live.DaemonConfig{Policy: o.Policy, CapacityMiB: o.CapacityMiB, LogPath: o.LogPath, Grace: o.Grace})
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			d.Stop()
		}
	}()
	procs := make([]*live.Proc, len(jobs))
	for i, j := range jobs {
		args := []string{"--model", j.Model, "--iterations", fmt.Sprint(j.Iterations), "--salus", d.Addr, "--job", j.ID, "--seed", fmt.Sprint(i)}
		if j.DeclaredS > 0 {
			args = append(args, "--declared-s", fmt.Sprint(j.DeclaredS))
		}
		if procs[i], err = p.Start(ctx, j.ID, "train.py", args...); err != nil {
			return nil, err
		}
	}
	for i, pr := range procs {
		select {
		case <-pr.Ready():
		case <-pr.Exited():
			_, err := pr.Wait()
			return nil, fmt.Errorf("job %s exited during start-up: %w", jobs[i].ID, err)
		}
	}
	t0 := time.Now()
	for i, pr := range procs {
		time.Sleep(time.Until(t0.Add(time.Duration(jobs[i].ArrivalS * float64(time.Second)))))
		if err := pr.Go(); err != nil {
			return nil, err
		}
	}
	run := &TraceRun{Policy: o.Policy.Name, Loss: map[string][2]float64{}, Memory: map[string][2]float64{}, CapsHeld: true}
	var errs []error
	for _, pr := range procs {
		out, err := pr.Wait()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		run.Loss[pr.Job] = [2]float64{out.Done.LossFirst, out.Done.LossLast}
		if out.Done.LaneMiB > 0 {
			run.Memory[pr.Job] = [2]float64{out.Done.PeakMiB, out.Done.LaneMiB}
			if out.Done.PeakMiB > out.Done.LaneMiB {
				run.CapsHeld = false
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs[0]
	}
	stopped = true
	res, err := d.Stop()
	if err != nil {
		return nil, err
	}
	run.Result = res
	for _, c := range res.Completion {
		run.Order = append(run.Order, c.ID)
	}
	return run, nil
}

func medianIter(its []live.IterLine, warmup int) float64 {
	if warmup >= len(its) {
		warmup = 0
	}
	xs := make([]float64, 0, len(its)-warmup)
	for _, it := range its[warmup:] {
		xs = append(xs, it.S)
	}
	return median(xs)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Table prints the report for people.
func (r *OverheadReport) Table(w io.Writer) error {
	fmt.Fprintf(w, "Suite overhead on live with pytorch workers: %d repetitions of %d iterations (first %d left out),\n"+
		"alternating blocks of %d under the daemon and without it in one process\n\n", r.Reps, r.Iterations, r.Warmup, r.Block)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "model\talone (ms/iter)\tunder daemon (ms/iter)\tratio\tadded (us/iter)\tgrant wait (us)\tratio from round trip\t")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.3f\t%.0f\t%.0f\t%.4f\t\n", row.Model, row.AloneS*1e3, row.DaemonS*1e3, row.Ratio, row.AddedUS,
			row.WaitUS, row.RoundTripRatio)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nAn empty iteration under the daemon (begin + end from Python): median %.0f us, p99 %.0f us.\n"+
		"ratio and added: medians over pairs of neighbouring iterations, one under the daemon and one without;\n"+
		"ratio from round trip: 1 + empty-iteration time / alone time.\n", r.RoundTripUS, r.RoundTripP99US)
	if len(r.TraceRuns) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nLive trace of real PyTorch jobs:")
	for _, j := range r.Trace {
		fmt.Fprintf(w, " %s (%s, %d iterations, arrives %.1f s, declares %.2f s);", j.ID, j.Model, j.Iterations, j.ArrivalS, j.DeclaredS)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tmakespan (s)\tavg queuing (s)\tavg JCT (s)\tp95 JCT (s)\tGPU busy\tcompletion order\t")
	for _, run := range r.TraceRuns {
		res := run.Result
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.0f%%\t%s\t\n", run.Policy, res.MakespanS, res.AvgQueuingS, res.AvgJCTS, res.P95JCTS,
			res.GPUBusy*100, strings.Join(run.Order, " "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, run := range r.TraceRuns {
		if len(run.Memory) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s lane memory caps held: %v;", run.Policy, run.CapsHeld)
		for _, j := range r.Trace {
			if m, ok := run.Memory[j.ID]; ok {
				fmt.Fprintf(w, " %s peak %.0f of %.0f MiB;", j.ID, m[0], m[1])
			}
		}
		fmt.Fprintln(w)
	}
	return nil
}

// JSON prints the report as one indented JSON object.
func (r *OverheadReport) JSON(w io.Writer) error { return writeJSON(w, r) }

// CSV prints one line per model.
func (r *OverheadReport) CSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"model", "alone_s", "daemon_s", "ratio", "added_us", "wait_us", "reps"})
	for _, row := range r.Rows {
		cw.Write([]string{row.Model, num(row.AloneS), num(row.DaemonS), num(row.Ratio), num(row.AddedUS), num(row.WaitUS), strconv.Itoa(len(row.AloneRuns))})
	}
	cw.Flush()
	return cw.Error()
}

// SuiteName is "overhead".
func (r *OverheadReport) SuiteName() string { return r.Suite }

// Headlines: the paper published no per-iteration overhead to compare with.
func (r *OverheadReport) Headlines() []Headline { return nil }

// The overhead suite: the live engine with PyTorch workers. Not part of --suite
// all: it needs PyTorch.
type overheadSuite struct{}

func init() { Register(overheadSuite{}) }

func (overheadSuite) Name() string { return "overhead" }
func (overheadSuite) Description() string {
	return "the live engine's per-iteration cost on real PyTorch jobs: --engine live"
}

// RunsOn: the overhead suite measures real processes, on the live engine only.
func (overheadSuite) RunsOn(e engine.Engine) error {
	if _, ok := e.(*live.Engine); !ok {
		name := engineName(engine.Reference())
		if e != nil {
			name = e.Name()
		}
		return fmt.Errorf("the overhead suite measures real processes: use --engine live (got %q)", name)
	}
	return nil
}

// Reads: the overhead suite's live trace runs the policies of --policy.
func (overheadSuite) Reads() []string { return []string{"policy"} }

// MeasuresReal: the simulator's device model does nothing to the overhead suite.
func (overheadSuite) MeasuresReal() {}

// AddFlags defines the overhead suite's flags: salus eval --suite overhead
// --engine live --worker pytorch.
func (overheadSuite) AddFlags(f *pflag.FlagSet, o *Options) {
	v := &o.Overhead
	f.StringVar(&v.Worker, "worker", "pytorch", "overhead suite: worker processes (pytorch: the real jobs of examples/)")
	f.StringVar(&v.PyTorch.Python, "python", "/usr/bin/python3", "overhead suite: Python interpreter that can import torch")
	f.StringVar(&v.PyTorch.Examples, "examples", "", "overhead suite: directory of train.py (default: examples/ of the repository)")
	f.StringSliceVar(&v.Models, "models", nil, "overhead suite: example models (default cnn,resnet18,mlp)")
	f.IntVar(&v.Iterations, "iterations", 40, "overhead suite: iterations per run")
	f.IntVar(&v.Block, "block", 1, "overhead suite: iterations per block, alternating under the daemon and without it")
	f.IntVar(&v.Warmup, "warmup", 5, "overhead suite: first iterations left out of the median")
	f.IntVar(&v.Reps, "reps", 3, "overhead suite: repetitions, alone and under the daemon")
	f.IntVar(&v.PyTorch.Threads, "threads", 2, "overhead suite: torch threads per job")
	f.StringVar(&v.PyTorch.Device, "torch-device", "auto", "overhead suite: auto, cpu or cuda")
	f.BoolVar(&v.NoTrace, "no-trace", false, "overhead suite: skip the live trace of real jobs")
}

// CheckFlags checks --worker.
func (overheadSuite) CheckFlags(o Options) error {
	if w := o.Overhead.Worker; w != "" && w != "pytorch" {
		return fmt.Errorf("the overhead suite runs --worker pytorch (got %q)", w)
	}
	return nil
}

// Run runs Options.Overhead (--policy: the trace's policies) and, with OutDir set,
// writes overhead.json there.
func (overheadSuite) Run(o Options) (Result, error) {
	if err := (overheadSuite{}).RunsOn(o.Engine); err != nil {
		return nil, err
	}
	oo := o.Overhead
	if o.CapacityMiB > 0 {
		oo.CapacityMiB = o.CapacityMiB
	}
	if len(o.Policies) > 0 {
		oo.TracePolicies = o.Policies
	}
	oo.OutDir = o.OutDir
	if o.Progress != nil {
		oo.Progress = o.Progress
	}
	rep, err := Overhead(o.context(), oo)
	if err != nil {
		return nil, err
	}
	if o.OutDir != "" {
		f, err := os.Create(filepath.Join(o.OutDir, "overhead.json"))
		if err != nil {
			return nil, err
		}
		err = rep.JSON(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	}
	return rep, nil
}
