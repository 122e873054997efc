package eval

import (
	"fmt"
	"math"

	"github.com/spf13/pflag"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/workload"
)

// PaperTuningImprovement is the paper's headline for hyper-parameter exploration:
// PACK improves GPU utilization 2.38x over running the jobs one by one (its
// superres_128 set).
const PaperTuningImprovement = 2.38

// TuningWorkload is one of the paper's hyper-parameter exploration sets (Fig. 11):
// many jobs of one model and batch size.
type TuningWorkload struct {
	Model string
	Batch int
	// PaperFIFOMin and PaperSalusMin are the set's makespans in the paper (300 jobs,
	// one by one under TensorFlow and under Salus PACK), in minutes.
	PaperFIFOMin, PaperSalusMin float64
}

// PaperImprovement is the paper's utilization improvement for the set.
func (w TuningWorkload) PaperImprovement() float64 { return w.PaperFIFOMin / w.PaperSalusMin }

// Iterations are how many iterations make one job take, alone on dev, the time
// the paper's one-by-one makespan gives it (that makespan / 300 jobs): an
// identity of running one at a time, as Table 1's mean time alone is, so that the
// PACK makespan is the prediction.
func (w TuningWorkload) Iterations(p workload.Profile, dev device.Device) int {
	alone := w.PaperFIFOMin * 60 / 300
	return max(1, int(math.Round((alone-p.StartupS)/dev.IterS(p.IterS))))
}

// TuningWorkloads are the paper's two hyper-parameter exploration sets (Fig. 11).
// The arXiv version's vae set is not in the MLSys paper, so it is not here.
var TuningWorkloads = []TuningWorkload{
	{Model: "resnet50", Batch: 50, PaperFIFOMin: 612.9, PaperSalusMin: 572.6},
	{Model: "superres", Batch: 128, PaperFIFOMin: 480.1, PaperSalusMin: 201.5},
}

// TuningSchemes are the ways to run many small jobs at once.
var TuningSchemes = []Scheme{{core.ModeSalus, "pack"}, {core.ModeMPS, "fifo"}, {core.ModeTimeslice, "fifo"}}

// TuningRun is one workload under one scheme.
type TuningRun struct {
	Workload   string  `json:"workload"`
	Scheme     string  `json:"scheme"`
	Jobs       int     `json:"jobs"`
	Iterations int     `json:"iterations"`
	Makespan   float64 `json:"makespan_s"`
	// SequentialS is the makespan of running the jobs one after another: jobs times
	// one job's standalone time on the device (start-up included, unscaled).
	SequentialS float64 `json:"sequential_makespan_s"`
	Improvement float64 `json:"improvement"`
	// PaperImprovement is the paper's for the set (pack only; 0 for the others).
	PaperImprovement float64 `json:"paper_improvement,omitempty"`
	GPUBusy          float64 `json:"gpu_busy"`
	Log              string  `json:"log,omitempty"`
}

// TuningReport is the tuning suite's outcome.
type TuningReport struct {
	Suite      string          `json:"suite"`
	Engine     string          `json:"engine"`
	Device     device.Device   `json:"device"`
	Modes      core.ModeParams `json:"modes"`
	Jobs       int             `json:"jobs_per_workload"`
	Iterations int             `json:"iterations,omitempty"` // 0: each set's own, from the paper's one-by-one makespan
	Runs       []TuningRun     `json:"runs"`
	Paper      Paper           `json:"paper"`
	// Trace names the user's trace of configurations (--trace); empty: the
	// paper's sets, Paper then holds the paper's headline.
	Trace string `json:"trace,omitempty"`
}

// TuningOptions configures the tuning suite.
type TuningOptions struct {
	Jobs       int // per workload; default 300
	Iterations int // per job; 0: each set's own (TuningWorkload.Iterations)
	Schemes    []Scheme
	Device     device.Device
	Modes      core.ModeParams
	OutDir     string
	// Trace, when set, is the user's own set of configurations (each job one,
	// at its arrival): it runs instead of the paper's sets.
	Trace *workload.Trace
}

// Tuning submits many copies of each small job at once and compares each scheme's
// makespan with running them one by one.
func Tuning(o TuningOptions) (*TuningReport, error) {
	if o.Jobs == 0 {
		o.Jobs = 300
	}
	if len(o.Schemes) == 0 {
		o.Schemes = TuningSchemes
	}
	o.Modes = o.Modes.WithDefaults()
	if o.Trace != nil {
		return tuningTrace(o)
	}
	rep := &TuningReport{Suite: "tuning", Engine: "sim", Device: o.Device, Modes: o.Modes, Jobs: o.Jobs, Iterations: o.Iterations}
	type task struct {
		trace  *workload.Trace
		scheme Scheme
		set    TuningWorkload
		seq    float64
	}
	var tasks []task
	for _, w := range TuningWorkloads {
		p, err := workload.Default().Lookup(w.Model, w.Batch, workload.Train)
		if err != nil {
			return nil, err
		}
		iters := o.Iterations
		if iters == 0 {
			iters = w.Iterations(p, o.Device)
		}
		t, err := sameJobs(fmt.Sprintf("tuning-%s-%d", w.Model, w.Batch), w.Model, w.Batch, o.Jobs, iters)
		if err != nil {
			return nil, err
		}
		for _, s := range o.Schemes {
			tasks = append(tasks, task{t, s, w, float64(o.Jobs) * o.Device.StandaloneS(p, iters)})
		}
	}
	var err error
	rep.Runs, err = parallel(len(tasks), func(i int) (TuningRun, error) {
		tk := tasks[i]
		run, err := simulateNamed(tk.trace, tk.scheme, o.Modes, o.Device, o.OutDir, tk.trace.Name+"-"+tk.scheme.String())
		if err != nil {
			return TuningRun{}, err
		}
		j := tk.trace.Jobs[0]
		tr := TuningRun{Workload: fmt.Sprintf("%s/%d", j.Model, j.Batch), Scheme: run.Scheme, Jobs: o.Jobs, Iterations: j.Iterations,
			Makespan: run.MakespanS, SequentialS: tk.seq, Improvement: tk.seq / run.MakespanS, GPUBusy: run.GPUBusy, Log: run.Log}
		if tk.scheme.Policy == "pack" {
			tr.PaperImprovement = tk.set.PaperImprovement()
		}
		return tr, nil
	})
	if err != nil {
		return nil, err
	}
	rep.Paper = Paper{Claim: "hyper-parameter tuning utilization, PACK over one by one (superres_128)", Value: PaperTuningImprovement}
	for _, r := range rep.Runs {
		if r.Scheme == "pack" && r.Workload == "superres/128" {
			rep.Paper.Measured = r.Improvement
		}
	}
	return rep, nil
}

// tuningTrace runs the user's configurations under each scheme against one by one.
func tuningTrace(o TuningOptions) (*TuningReport, error) {
	t := o.Trace
	seq, iters := 0.0, 0
	for _, j := range t.Jobs {
		if j.Kind == workload.Infer {
			return nil, fmt.Errorf("trace %s: job %s is an inference job: the tuning suite runs training configurations (kind train); give --suite inference for inference jobs", t.Name, j.ID)
		}
		p := j.Profile
		if p == nil {
			lp, err := workload.Default().Lookup(j.Model, j.Batch, j.Kind)
			if err != nil {
				return nil, fmt.Errorf("trace %s: job %s: %w", t.Name, j.ID, err)
			}
			p = &lp
		}
		seq += o.Device.StandaloneS(*p, j.Iterations)
		iters += j.Iterations
	}
	if len(t.Jobs) == 0 {
		return nil, fmt.Errorf("trace %s has no jobs: the tuning suite needs the configurations to run", t.Name)
	}
	rep := &TuningReport{Suite: "tuning", Engine: "sim", Device: o.Device, Modes: o.Modes, Jobs: len(t.Jobs), Trace: t.Name}
	var err error
	rep.Runs, err = parallel(len(o.Schemes), func(i int) (TuningRun, error) {
		s := o.Schemes[i]
		run, err := simulateNamed(t, s, o.Modes, o.Device, o.OutDir, "tuning-"+s.String())
		if err != nil {
			return TuningRun{}, err
		}
		return TuningRun{Workload: t.Name, Scheme: run.Scheme, Jobs: len(t.Jobs), Iterations: iters, Makespan: run.MakespanS,
			SequentialS: seq, Improvement: seq / run.MakespanS, GPUBusy: run.GPUBusy, Log: run.Log}, nil
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// The tuning suite: many small jobs at once (the paper's hyper-parameter exploration).
type tuningSuite struct{}

func init() { Register(tuningSuite{}) }

func (tuningSuite) Name() string { return "tuning" }
func (tuningSuite) Description() string {
	return "hyper-parameter exploration: many small jobs at once against one by one"
}
func (tuningSuite) AllOrder() int { return 2 }

// Reads: the tuning suite runs on the node of --gpus; --trace (with --catalog)
// gives it the user's configurations.
func (tuningSuite) Reads() []string { return []string{"gpus", "gpu-placement", "trace", "catalog"} }

// TraceOptional: without --trace the tuning suite runs the paper's sets.
func (tuningSuite) TraceOptional() {}

// Schemes are the tuning suite's schemes.
func (tuningSuite) Schemes(Options) []Scheme { return TuningSchemes }

// AddFlags defines --tuning-jobs and --tuning-iterations.
func (tuningSuite) AddFlags(f *pflag.FlagSet, o *Options) {
	f.IntVar(&o.Tuning.Jobs, "tuning-jobs", 300, "tuning: jobs per workload")
	f.IntVar(&o.Tuning.Iterations, "tuning-iterations", 0, "tuning: iterations per job (0: each set's jobs as long alone as the paper's one-by-one makespan / 300)")
}

// CheckFlags checks them.
func (tuningSuite) CheckFlags(o Options) error {
	if o.Tuning.Jobs < 1 || o.Tuning.Iterations < 0 {
		return fmt.Errorf("--tuning-jobs must be at least 1 and --tuning-iterations at least 0 (0: the paper's length)")
	}
	if o.OwnTrace() && (o.Tuning.Jobs != 300 || o.Tuning.Iterations != 0) {
		return fmt.Errorf("--tuning-jobs and --tuning-iterations shape the paper's sets: with --trace your trace's jobs and iterations run")
	}
	return nil
}

func (tuningSuite) Run(o Options) (Result, error) {
	to := o.Tuning
	to.Device, to.Modes, to.OutDir = o.Device, o.Modes, o.OutDir
	if o.OwnTrace() {
		to.Trace = o.Training.Trace
	}
	if to.Jobs < 0 || to.Iterations < 0 {
		return nil, fmt.Errorf("the tuning suite's jobs and iterations must be at least 1")
	}
	rep, err := Tuning(to)
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// SuiteName is "tuning".
func (r *TuningReport) SuiteName() string { return r.Suite }

// Headlines are PACK's improvement on each of the paper's sets, beside the paper's.
func (r *TuningReport) Headlines() []Headline {
	var out []Headline
	for _, run := range r.Runs {
		if run.PaperImprovement == 0 {
			continue
		}
		why := tuningWhy[run.Workload]
		if r.Iterations != 0 {
			why = "jobs of --tuning-iterations, not the paper's length; " + why
		}
		out = append(out, Headline{Claim: "tuning: utilization, PACK over one by one, " + run.Workload, Paper: run.PaperImprovement,
			Measured: run.Improvement, Explanation: explain(run.PaperImprovement, run.Improvement, why)})
	}
	return out
}

// tuningWhy says why a set's improvement differs from the paper's (docs/evaluation.md, "The
// paper, figure by figure").
var tuningWhy = map[string]string{
	"resnet50/50":  "the catalog's demand of 0.89 leaves 11% of each iteration for another lane, and start-up here overlaps other jobs' iterations (salus eval --suite paper runs it as TensorFlow's GPU work)",
	"superres/128": "superres's catalog demand (0.37, an estimate) lets many lanes overlap, and start-up here overlaps other jobs' iterations (salus eval --suite paper runs it as TensorFlow's GPU work)",
}
