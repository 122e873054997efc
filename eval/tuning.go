package eval

import (
	"fmt"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/workload"
)

// PaperTuningImprovement is the paper's headline for hyper-parameter exploration:
// PACK improves GPU utilization 2.38x over running the jobs one by one.
const PaperTuningImprovement = 2.38

// TuningWorkloads are the paper's hyper-parameter exploration jobs.
var TuningWorkloads = []struct {
	Model string
	Batch int
}{{"vae", 64}, {"superres", 128}, {"resnet50", 50}}

// TuningSchemes are the ways to run many small jobs at once.
var TuningSchemes = []Scheme{{core.ModeSalus, "pack"}, {core.ModeMPS, "fifo"}, {core.ModeTimeslice, "fifo"}}

// TuningRun is one workload under one scheme.
type TuningRun struct {
	Workload string  `json:"workload"`
	Scheme   string  `json:"scheme"`
	Jobs     int     `json:"jobs"`
	Makespan float64 `json:"makespan_s"`
	// SequentialS is the makespan of running the jobs one after another: jobs times
	// one job's standalone time on the device (start-up included, unscaled).
	SequentialS float64 `json:"sequential_makespan_s"`
	Improvement float64 `json:"improvement"`
	GPUBusy     float64 `json:"gpu_busy"`
	Log         string  `json:"log,omitempty"`
}

// TuningReport is the tuning suite's outcome.
type TuningReport struct {
	Suite      string          `json:"suite"`
	Engine     string          `json:"engine"`
	Device     device.Device   `json:"device"`
	Modes      core.ModeParams `json:"modes"`
	Jobs       int             `json:"jobs_per_workload"`
	Iterations int             `json:"iterations"`
	Runs       []TuningRun     `json:"runs"`
	Paper      Paper           `json:"paper"`
}

// TuningOptions configures the tuning suite.
type TuningOptions struct {
	Jobs       int // per workload; default 300
	Iterations int // per job; default 500
	Schemes    []Scheme
	Device     device.Device
	Modes      core.ModeParams
	OutDir     string
}

// Tuning submits many copies of each small job at once and compares each scheme's
// makespan with running them one by one.
func Tuning(o TuningOptions) (*TuningReport, error) {
	if o.Jobs == 0 {
		o.Jobs = 300
	}
	if o.Iterations == 0 {
		o.Iterations = 500
	}
	if len(o.Schemes) == 0 {
		o.Schemes = TuningSchemes
	}
	rep := &TuningReport{Suite: "tuning", Engine: "sim", Device: o.Device, Modes: o.Modes, Jobs: o.Jobs, Iterations: o.Iterations}
	type task struct {
		trace  *workload.Trace
		scheme Scheme
		seq    float64
	}
	var tasks []task
	for _, w := range TuningWorkloads {
		p, err := workload.Default().Lookup(w.Model, w.Batch, workload.Train)
		if err != nil {
			return nil, err
		}
		t := &workload.Trace{Name: fmt.Sprintf("tuning-%s-%d", w.Model, w.Batch)}
		for i := range o.Jobs {
			t.Jobs = append(t.Jobs, workload.Job{ID: fmt.Sprintf("%s-%03d", w.Model, i+1), Model: w.Model, Batch: w.Batch,
				Kind: workload.Train, Iterations: o.Iterations, Profile: p})
		}
		for _, s := range o.Schemes {
			tasks = append(tasks, task{t, s, float64(o.Jobs) * o.Device.StandaloneS(p, o.Iterations)})
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
		return TuningRun{Workload: fmt.Sprintf("%s/%d", j.Model, j.Batch), Scheme: run.Scheme, Jobs: o.Jobs,
			Makespan: run.MakespanS, SequentialS: tk.seq, Improvement: tk.seq / run.MakespanS, GPUBusy: run.GPUBusy, Log: run.Log}, nil
	})
	if err != nil {
		return nil, err
	}
	rep.Paper = Paper{Claim: "hyper-parameter tuning utilization, PACK over one by one", Value: PaperTuningImprovement}
	for _, r := range rep.Runs {
		if r.Scheme == "pack" && r.Improvement > rep.Paper.Measured {
			rep.Paper.Measured = r.Improvement
		}
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

func (tuningSuite) Run(o Options) (Result, error) {
	to := o.Tuning
	to.Device, to.Modes, to.OutDir = o.Device, o.Modes, o.OutDir
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

// Headlines is PACK's best utilization improvement, beside the paper's.
func (r *TuningReport) Headlines() []Headline {
	best := ""
	for _, run := range r.Runs {
		if run.Scheme == "pack" && run.Improvement == r.Paper.Measured {
			best = run.Workload
		}
	}
	return []Headline{{Claim: "tuning: utilization, PACK over one by one (best workload: " + best + ")", Paper: r.Paper.Value, Measured: r.Paper.Measured,
		Explanation: explain(r.Paper.Value, r.Paper.Measured,
			"lanes here overlap until the jobs' compute demands fill the GPU, with no executor or CPU contention; the small jobs' times and demands are estimates, since Salus published none")}}
}
