// Package eval runs experiments and reports their results as tables, JSON and CSV.
// Each suite (training, tuning, inference, paper, overhead) is one file that implements
// Suite and registers itself (Register); its Result prints itself and carries the
// paper's figures. RunSuite runs one by name, or with "all" every suite that
// implements InAll, keeping going past a failed one. Runs go to an engine (package
// engine: the simulator, package sim, or the live engine, package live), which
// each suite takes or refuses by its own declaration (RunsOn); the overhead
// suite drives the live engine's PyTorch workers itself. It composes the
// workload, sim, live and metrics packages: it must hold no scheduling logic, and computes metrics only
// through package metrics, from the event logs the engines write.
package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/salusgo/salus/bound"
	"github.com/salusgo/salus/cluster"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/engine"
	"github.com/salusgo/salus/interference"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/plots"
	"github.com/salusgo/salus/provenance"
	"github.com/salusgo/salus/sim"
	"github.com/salusgo/salus/workload"
)

// PaperSRTFSpeedup is the paper's headline: SRTF's average JCT is 3.19x better than FIFO's.
const PaperSRTFSpeedup = 3.19

// TraceInfo names the trace a report ran.
type TraceInfo struct {
	Name string `json:"name"`
	// Kind is the generator's kind of a generated trace; empty for a trace file,
	// whose report compares nothing with the paper.
	Kind string `json:"kind,omitempty"`
	Jobs int    `json:"jobs"`
	Seed int64  `json:"seed"`
	// Load is the factor a trace file's arrival rate was scaled by (--load); 0: as
	// in the file (a generated trace's load is in its name).
	Load float64 `json:"load,omitempty"`
	// Resample is how the trace was drawn from a trace file (--resample), seeded by
	// Seed; empty: the file as it is.
	Resample string `json:"resample,omitempty"`
}

// SeedUsed says whether the seed drew the trace: a generated trace, or a
// resample of a file; a trace file or a daemon's log has none.
func (t TraceInfo) SeedUsed() bool { return t.Kind != "" || t.Resample != "" }

// NewTraceInfo describes t.
func NewTraceInfo(t *workload.Trace) TraceInfo {
	return TraceInfo{Name: t.Name, Kind: t.Kind, Jobs: len(t.Jobs), Seed: t.Seed, Load: t.Load, Resample: t.ResampledBy}
}

// Run is the result of one scheme on one trace.
type Run struct {
	Scheme string `json:"scheme"`
	Policy string `json:"policy"`
	Mode   string `json:"mode"`
	metrics.Result
	// Ratios to the fifo run of the same report (fifo / this: above 1 is better).
	JCTSpeedup      float64 `json:"avg_jct_speedup_vs_fifo,omitempty"`
	MakespanSpeedup float64 `json:"makespan_speedup_vs_fifo,omitempty"`
	// Ratios to the trace's lower bounds (Report.Bound: this over the bound, at
	// least 1 in the simulator); 0 when there is no bound or the run lost jobs.
	JCTVsBound      float64 `json:"avg_jct_vs_bound,omitempty"`
	MakespanVsBound float64 `json:"makespan_vs_bound,omitempty"`
	// Log is the event log's path, when one was written.
	Log string `json:"log,omitempty"`
	// Error says why the run failed; its figures are then zero. The other runs of
	// the report are kept.
	Error string `json:"error,omitempty"`
	// Recorded is what the pictures need of the run, recorded from its events as
	// they were written, so that a report need not read the log back; nil when
	// no log was written.
	Recorded *plots.RunLog `json:"-"`
}

// RunsFailed is the error of a report some of whose runs failed: the report holds
// the others, and a row for each failed run with its error.
type RunsFailed struct {
	Failed, Total int
	First         error
}

func (e *RunsFailed) Error() string {
	return fmt.Sprintf("%d of %d runs failed; the first: %v", e.Failed, e.Total, e.First)
}

func (e *RunsFailed) Unwrap() error { return e.First }

// Report is a suite's outcome.
type Report struct {
	Suite  string          `json:"suite"`
	Engine string          `json:"engine"`
	Trace  TraceInfo       `json:"trace"`
	Device device.Device   `json:"device"`
	Modes  core.ModeParams `json:"modes"`
	Runs   []Run           `json:"runs"`
	Paper  Paper           `json:"paper"`
	// Recommendation says which scheme is best on which metric, and by how much
	// (Recommend); empty with fewer than two runs.
	Recommendation string `json:"recommendation,omitempty"`
	// Bound is the trace's lower bounds on this device (SetBound); nil when not
	// computed.
	Bound *bound.Bound `json:"bound,omitempty"`
	// Predicted is, for live runs, the simulator's figures for the same jobs
	// (salus report on a daemon's log); empty otherwise.
	Predicted []Predicted `json:"predicted,omitempty"`
	// Cluster is the cluster file the runs went to (Device is then the
	// reference device); empty on one node.
	Cluster string `json:"cluster,omitempty"`
	// Repeats is, for live runs repeated (--repeat N), each scheme's mean and
	// interval over the repeats; Runs are then the first repeat's.
	Repeats *Repeats `json:"repeats,omitempty"`
	// Noise is, for live runs with event logs, how far the jobs' iteration
	// times alone moved across the runs; Busy warns when that exceeded a lead
	// the recommendation judged.
	Noise *Noise `json:"noise,omitempty"`
	Busy  string `json:"busy_warning,omitempty"`
}

// Paper is the published figure a report compares itself to.
type Paper struct {
	Claim    string  `json:"claim"`
	Value    float64 `json:"value"`
	Measured float64 `json:"measured"`
}

// TrainingOptions configures the training suite.
type TrainingOptions struct {
	Trace *workload.Trace
	// Schemes are the schemes to run; default: those of TrainingSchemes the
	// engine can carry out.
	Schemes []Scheme
	Device  device.Device
	Modes   core.ModeParams
	// OutDir, when set, receives each run's event log (events-SCHEME.jsonl.gz).
	OutDir string
	// Engine runs the schemes; nil: the simulator. Runs go in parallel unless the
	// engine's are serial (engine.Serial: live runs share one machine).
	Engine engine.Engine
	// Context stops the runs of an engine that looks at it; nil: none.
	Context context.Context
	// Warnings receives the engine's warnings and progress; nil: nowhere.
	Warnings io.Writer
	// Cluster, when set, is the nodes the runs go to instead of Device's node.
	Cluster Cluster
}

// Cluster is a cluster of nodes to run on (engine.Run's Cluster and
// NodePlacement); the zero value is none: the device's node.
type Cluster struct {
	Nodes *cluster.Cluster
	// Placement is the node placement's name ("": core's default).
	Placement string
}

// Training runs the trace under each scheme on the engine. A run that fails stays
// in the report as a row with its error, and Training returns the report with a
// *RunsFailed. A scheme the engine cannot carry out, a plan it refuses, or a job
// that needs more GPUs at once than a node has, is an error before any run.
func Training(o TrainingOptions) (*Report, error) {
	eng := o.Engine
	if eng == nil {
		eng = sim.Engine{}
	}
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	if len(o.Schemes) == 0 {
		o.Schemes = SchemesFor(eng, TrainingSchemes)
	}
	o.Modes = o.Modes.WithDefaults() // the zero value is the defaults
	if err := fitsTheNode(o.Trace, o.Device, o.Cluster); err != nil {
		return nil, err
	}
	rep := &Report{Suite: "training", Engine: eng.Name(), Device: o.Device, Modes: o.Modes,
		Trace: NewTraceInfo(o.Trace)}
	var err error
	if engine.IsSerial(eng) {
		ps := make([]core.Policy, len(o.Schemes))
		for i, s := range o.Schemes {
			if ps[i], err = core.Compose(s.Mode, s.Policy, o.Modes); err != nil {
				return nil, err
			}
			if err := engine.Check(eng, ps[i]); err != nil {
				return nil, err
			}
		}
		if pl, ok := eng.(engine.Planner); ok {
			if ps, err = pl.Plan(o.Trace, o.Device, ps, o.Warnings); err != nil {
				return nil, err
			}
		}
		for i, p := range ps {
			run, err := RunOn(ctx, eng, o.Trace, o.Schemes[i], p, o.Device, o.Cluster, logPathIn(o.OutDir, eng, o.Schemes[i].String()), o.Warnings)
			if err != nil {
				return nil, err
			}
			rep.Runs = append(rep.Runs, run)
		}
	} else {
		runs := make([]Run, len(o.Schemes))
		errs := make([]error, len(o.Schemes))
		var wg sync.WaitGroup
		for i, s := range o.Schemes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runs[i], errs[i] = runScheme(ctx, eng, o.Trace, s, o.Modes, o.Device, o.Cluster, logPathIn(o.OutDir, eng, s.String()), o.Warnings)
				if errs[i] != nil {
					runs[i] = Run{Scheme: s.String(), Policy: s.Policy, Mode: s.Mode, Error: errs[i].Error()}
				}
			}()
		}
		wg.Wait()
		rep.Runs = runs
		for _, e := range errs {
			if e != nil {
				if err == nil {
					err = &RunsFailed{Total: len(runs), First: e}
				}
				err.(*RunsFailed).Failed++
			}
		}
	}
	rep.compareToFIFO()
	// A trace with no bound (a job too big for the device's memory) has failed
	// runs too: their errors say why. The bounds are of one node: none on a
	// cluster.
	if o.Cluster.Nodes == nil {
		_ = rep.SetBound(o.Trace)
	} else {
		rep.Cluster = o.Cluster.Nodes.Source
	}
	rep.Recommendation = rep.Recommend()
	if engine.IsSerial(eng) {
		if nerr := rep.JudgeNoise(); nerr != nil && err == nil {
			err = nerr
		}
	}
	return rep, err
}

// fitsTheNode is the check, before any run, that no job of the trace needs
// more GPUs at once than a node has: every scheme would fail on such a job
// alike, so it is one error, not one a scheme.
func fitsTheNode(t *workload.Trace, dev device.Device, cl Cluster) error {
	most, where, fix := dev.Count(), "the node has", "give the node at least %d GPUs (--gpus)"
	if cl.Nodes != nil {
		most, where, fix = cl.Nodes.MaxNodeGPUs(), "the largest node of the cluster has", "add a node of %d GPUs to the cluster"
	}
	for _, j := range t.Jobs {
		if k := j.GPUCount(); k > most {
			return fmt.Errorf("trace %s: job %q needs %d GPUs at once but %s %d, so no scheme can run it (a job's GPUs are on one node): %s, or take the job out of the trace",
				t.Name, j.ID, k, where, most, fmt.Sprintf(fix, k))
		}
	}
	return nil
}

// JudgeNoise measures, from the runs' event logs, the noise of live runs
// (NoiseOfLogs), and judges the recommendation against it: a lead smaller than
// the noise is within it, and Busy says so. Runs without logs: nothing.
func (r *Report) JudgeNoise() error {
	var logs []string
	for _, run := range r.Runs {
		if run.Error == "" && run.Log != "" {
			logs = append(logs, run.Log)
		}
	}
	if len(logs) < 2 {
		return nil
	}
	n, err := NoiseOfLogs(logs)
	if err != nil || n.Spread <= 0 {
		return err
	}
	r.Noise = &n
	cands := r.candidates()
	r.Recommendation = RecommendNoisy(cands, r.Unit(), n)
	r.Busy = BusyWarning(n, cands)
	return nil
}

// SchemesFor is the schemes of ss that engine eng can carry out, in order.
func SchemesFor(eng engine.Engine, ss []Scheme) []Scheme {
	var out []Scheme
	for _, s := range ss {
		p, err := core.Compose(s.Mode, s.Policy, core.ModeParams{})
		if err == nil && engine.Check(eng, p) == nil {
			out = append(out, s)
		}
	}
	return out
}

// runScheme composes s with mp and runs it on eng.
func runScheme(ctx context.Context, eng engine.Engine, t *workload.Trace, s Scheme, mp core.ModeParams, dev device.Device, cl Cluster, logPath string, warn io.Writer) (Run, error) {
	p, err := core.Compose(s.Mode, s.Policy, mp)
	if err != nil {
		return Run{}, err
	}
	if err := engine.Check(eng, p); err != nil {
		return Run{}, err
	}
	return RunOn(ctx, eng, t, s, p, dev, cl, logPath, warn)
}

// logPathIn is where a run of scheme on eng writes its event log in outDir:
// events-SCHEME.jsonl.gz for the reference engine, events-ENGINE-SCHEME.jsonl.gz
// for the others; "" without outDir.
func logPathIn(outDir string, eng engine.Engine, scheme string) string {
	if outDir == "" {
		return ""
	}
	if ref := engine.Reference(); ref != nil && ref.Name() != eng.Name() {
		scheme = eng.Name() + "-" + scheme
	}
	return filepath.Join(outDir, "events-"+scheme+".jsonl.gz")
}

// parallel runs n tasks at once and returns their results in order, or the first
// error.
func parallel[T any](n int, task func(i int) (T, error)) ([]T, error) {
	out := make([]T, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = task(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// simulateNamed is simulate with the log named events-NAME.jsonl.gz.
func simulateNamed(t *workload.Trace, s Scheme, mp core.ModeParams, dev device.Device, outDir, name string) (Run, error) {
	log := ""
	if outDir != "" {
		log = filepath.Join(outDir, "events-"+name+".jsonl.gz")
	}
	return Simulate(t, s, mp, dev, log)
}

// Simulate runs one scheme on a trace in the simulator and computes its metrics from
// the event log, which it also writes to logPath when that is set.
func Simulate(t *workload.Trace, s Scheme, mp core.ModeParams, dev device.Device, logPath string) (Run, error) {
	return SimulateOpts(t, s, mp, dev, SimOptions{Log: logPath})
}

// SimOptions are Simulate's choices beyond the scheme and the device.
type SimOptions struct {
	// Log is where the event log goes ("": none).
	Log string
	// PerIteration writes (and runs) every iteration's events rather than a
	// stretch record per run of back-to-back iterations (sim.Options.PerIteration).
	PerIteration bool
	// Cluster, when set, is the nodes to run on instead of the device's node.
	Cluster Cluster
	// Interference is the co-location model (sim.Options.Interference); nil:
	// one share per GPU by demands.
	Interference *interference.Model
}

// SimulateOpts is Simulate with o.
func SimulateOpts(t *workload.Trace, s Scheme, mp core.ModeParams, dev device.Device, o SimOptions) (Run, error) {
	logPath := o.Log
	p, err := core.Compose(s.Mode, s.Policy, mp)
	if err != nil {
		return Run{}, err
	}
	return RunOn(context.Background(), sim.Engine{PerIteration: o.PerIteration, Interference: o.Interference}, t, s, p, dev, o.Cluster, logPath, nil)
}

// RunOn runs scheme s (composed as p) on a trace on engine eng, on dev's node or
// cl's nodes, and computes its metrics from the event log, which it also writes to logPath when that is set;
// the engine's warnings go to warn (nil: nowhere).
func RunOn(ctx context.Context, eng engine.Engine, t *workload.Trace, s Scheme, p core.Policy, dev device.Device, cl Cluster, logPath string, warn io.Writer) (Run, error) {
	run := Run{Scheme: s.String(), Policy: p.Name, Mode: p.Mode, Log: logPath}
	// The pictures are drawn from the same pass over the events as the metrics.
	var rec *plots.Recorder
	r := engine.Run{Trace: t, Policy: p, Scheme: run.Scheme, Device: dev, LogPath: logPath, Output: warn,
		Cluster: cl.Nodes, NodePlacement: cl.Placement}
	if logPath != "" {
		rec = plots.NewRecorder()
		r.Sink = rec
	}
	out, err := eng.Run(ctx, r)
	if out.Policy != "" {
		run.Scheme, run.Policy = out.Policy, out.Policy
	}
	run.Result, run.Log = out.Result, out.Log
	if err != nil {
		return run, fmt.Errorf("%s: %w", run.Scheme, err)
	}
	if rec != nil && out.SinkFed {
		if run.Recorded, err = rec.Log(); err != nil {
			return run, fmt.Errorf("%s: %w", run.Scheme, err)
		}
	}
	return run, nil
}

// Compare fills in what a report assembled by hand (salus report of several logs)
// computes from its runs: each run's ratios to the fifo run, when there is one,
// and the recommendation.
func (r *Report) Compare() {
	r.compareToFIFO()
	r.Recommendation = r.Recommend()
}

func (r *Report) compareToFIFO() {
	if r.Trace.Kind != "" { // the paper's experiment, on a generated trace: not a user's
		r.Paper = Paper{Claim: "average JCT, SRTF over FIFO", Value: PaperSRTFSpeedup}
	}
	var fifo *Run
	for i := range r.Runs {
		if r.Runs[i].Policy == "fifo" && r.Runs[i].Mode == "exclusive" {
			fifo = &r.Runs[i]
		}
	}
	if fifo == nil || fifo.Error != "" {
		return
	}
	for i := range r.Runs {
		run := &r.Runs[i]
		if run.Error != "" {
			continue
		}
		run.JCTSpeedup = fifo.AvgJCTS / run.AvgJCTS
		run.MakespanSpeedup = fifo.MakespanS / run.MakespanS
		if run.Policy == "srtf" && run.Mode == "salus" && r.Paper.Value > 0 {
			r.Paper.Measured = run.JCTSpeedup
		}
	}
}

// Output is a suite's report in the three formats.
type Output interface {
	Table(io.Writer) error
	JSON(io.Writer) error
	CSV(io.Writer) error
}

// JobsOutput is a report with per-job results: WriteResults writes them to jobs.csv.
type JobsOutput interface {
	JobsCSV(io.Writer) error
}

// WriteResults writes results.json and results.csv into dir, and jobs.csv (one
// line per job and run) for a report with per-job results. results.json is the
// report's JSON with where it came from (prov) first, under "provenance".
func WriteResults(dir string, r Output, prov provenance.Record) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	withProvenance := func(w io.Writer) error { return jsonWithProvenance(w, r, prov) }
	files := map[string]func(io.Writer) error{"results.json": withProvenance, "results.csv": r.CSV}
	if j, ok := r.(JobsOutput); ok {
		files["jobs.csv"] = j.JobsCSV
	}
	for name, write := range files {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := write(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}

// jsonWithProvenance writes r's JSON with prov as its first field,
// "provenance": a report that is not a JSON object goes under "results".
func jsonWithProvenance(w io.Writer, r Output, prov provenance.Record) error {
	var body bytes.Buffer
	if err := r.JSON(&body); err != nil {
		return err
	}
	p, err := json.Marshal(prov)
	if err != nil {
		return err
	}
	var all []byte
	b := bytes.TrimSpace(body.Bytes())
	switch inner := bytes.TrimSpace(bytes.TrimPrefix(b, []byte("{"))); {
	case len(b) > 0 && b[0] == '{' && len(inner) > 0 && inner[0] == '}':
		all = fmt.Appendf(nil, `{"provenance":%s}`, p)
	case len(b) > 0 && b[0] == '{':
		all = fmt.Appendf(nil, `{"provenance":%s,%s`, p, inner)
	default:
		all = fmt.Appendf(nil, `{"provenance":%s,"results":%s}`, p, b)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, all, "", "  "); err != nil {
		return fmt.Errorf("results.json: %w", err)
	}
	out.WriteByte('\n')
	_, err = w.Write(out.Bytes())
	return err
}

// The training suite: the trace under each scheme (the paper's long-running jobs).
type trainingSuite struct{}

// DefaultSuite is the suite salus eval runs when none is named.
const DefaultSuite = "training"

func init() { Register(trainingSuite{}) }

func (trainingSuite) Name() string { return DefaultSuite }
func (trainingSuite) Description() string {
	return "a trace under each scheme: makespan, queuing, JCTs against fifo"
}
func (trainingSuite) AllOrder() int { return 1 }

// RunsOn: the training suite runs on every engine.
func (trainingSuite) RunsOn(engine.Engine) error { return nil }

// Reads: the training suite reads every common flag: its trace, its schemes, the node.
func (trainingSuite) Reads() []string { return CommonFlags }

// Schemes are Options.Training.Schemes, or the defaults the engine runs.
func (trainingSuite) Schemes(o Options) []Scheme {
	if len(o.Training.Schemes) > 0 {
		return o.Training.Schemes
	}
	eng := o.Engine
	if eng == nil {
		eng = sim.Engine{}
	}
	return SchemesFor(eng, TrainingSchemes)
}

// Run runs Options.Training with the common options; a failed run is a row of the
// result, which comes back with a *RunsFailed.
func (trainingSuite) Run(o Options) (Result, error) {
	to := o.Training
	to.Device, to.Modes, to.OutDir = o.Device, o.Modes, o.OutDir
	to.Engine, to.Context, to.Warnings = o.Engine, o.Context, o.Progress
	if to.Trace == nil {
		return nil, fmt.Errorf("the training suite needs a trace")
	}
	if o.Repeat > 1 {
		return RepeatTraining(to, o.Repeat)
	}
	rep, err := Training(to)
	if rep == nil {
		return nil, err
	}
	return rep, err
}

// SuiteName is the report's suite.
func (r *Report) SuiteName() string { return r.Suite }

// trainingWhy says, by generated trace kind, why one seed's SRTF gain differs
// from the paper's.
var trainingWhy = map[string]string{
	workload.Paper:    "one seed of a heavy-tailed trace, with start-up off the GPU (the default): the paper suite gives the 10-seed range with TensorFlow's start-up on the GPU, which holds the paper's 3.19x",
	workload.Salus100: "salus100 is the earlier stand-in (1, 5 or 10 min jobs, Poisson arrivals at load 1), where short jobs seldom queue behind long ones; the paper trace follows the paper's description",
}

// Headlines is SRTF's average JCT over FIFO's, beside the paper's.
func (r *Report) Headlines() []Headline {
	if r.Paper.Value == 0 {
		return nil
	}
	return []Headline{{Claim: r.Suite + ": average JCT, SRTF over FIFO", Paper: r.Paper.Value, Measured: r.Paper.Measured,
		Explanation: explain(r.Paper.Value, r.Paper.Measured, trainingWhy[r.Trace.Kind])}}
}
