package eval

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/sim"
	"github.com/salusgo/salus/workload"
)

// The paper's inference headlines, from Fig. 10's GPU counts (42 without
// sharing, 6 with MPS, 1 with Salus): Salus hosts the 42 inference jobs on 42x
// fewer GPUs than without sharing and 6x fewer than with MPS. (The abstract's
// "7x over NVIDIA MPS" is 42/6, MPS over no sharing.)
const (
	PaperInferenceVsExclusive = 42
	PaperInferenceVsMPS       = 6
)

// InferenceModels are the 14 models of the paper's inference experiment.
var InferenceModels = []string{"vgg11", "vgg16", "vgg19", "resnet50", "resnet101", "resnet152", "overfeat",
	"inception3", "inception4", "googlenet", "alexnet", "seq2seq", "vae", "superres"}

// InferencePauses are the pauses between requests, one drawn per job.
var InferencePauses = []float64{10, 20, 30}

// InferenceSchemes: no sharing (a GPU each), MPS, and Salus with one lane serving
// requests in the order they come.
var InferenceSchemes = []Scheme{{core.ModeExclusive, "fifo"}, {core.ModeMPS, "fifo"}, {core.ModeSalus, "fcfs"}}

// ModelLatency is one model's request latency under a scheme, against alone.
type ModelLatency struct {
	Model    string  `json:"model"`
	Requests int     `json:"requests"`
	MeanS    float64 `json:"latency_mean_s"`
	P99S     float64 `json:"latency_p99_s"`
	AloneS   float64 `json:"latency_alone_s"`
}

// InferenceRun is one scheme's outcome.
type InferenceRun struct {
	Scheme     string         `json:"scheme"`
	GPUsNeeded int            `json:"gpus_needed"`
	Models     []ModelLatency `json:"models"`
}

// InferenceReport is the inference suite's outcome.
type InferenceReport struct {
	Suite    string          `json:"suite"`
	Engine   string          `json:"engine"`
	Device   device.Device   `json:"device"`
	Modes    core.ModeParams `json:"modes"`
	Jobs     int             `json:"jobs"`
	Requests int             `json:"requests_per_job"`
	Seed     int64           `json:"seed"`
	Runs     []InferenceRun  `json:"runs"`
	Papers   []Paper         `json:"paper"`
}

// InferenceOptions configures the inference suite.
type InferenceOptions struct {
	Instances int // per model; default 3
	Requests  int // per job; default 100
	Seed      int64
	Schemes   []Scheme
	Device    device.Device
	Modes     core.ModeParams

	// The study of the user's own jobs (InferenceStudy), when SLOP99 is set:
	// the p99 latency to meet; the jobs are Trace's inference jobs, or Jobs jobs
	// of InferenceModels in turn, each sending its next request 1/RequestRate s
	// after its last answer (0: the paper's pauses, drawn with Seed).
	SLOP99      time.Duration
	Trace       *workload.Trace
	Jobs        int
	RequestRate float64
}

// InferenceTrace builds the 42 inference jobs: every model at batch 1, each job with
// a pause drawn from InferencePauses, all arriving at once.
func InferenceTrace(instances, requests int, seed int64) (*workload.Trace, error) {
	rng := rand.New(rand.NewPCG(uint64(seed), 42))
	t := &workload.Trace{Name: "inference", Seed: seed}
	for _, m := range InferenceModels {
		p, err := workload.Default().Lookup(m, 1, workload.Infer)
		if err != nil {
			return nil, err
		}
		for i := range instances {
			t.Jobs = append(t.Jobs, workload.Job{ID: fmt.Sprintf("%s-%d", m, i+1), Model: m, Batch: 1, Kind: workload.Infer,
				Iterations: requests, PauseS: InferencePauses[rng.IntN(len(InferencePauses))], Profile: &p})
		}
	}
	return t, nil
}

// Inference hosts the inference jobs under each scheme: as few GPUs as the scheme's
// memory rule allows, each GPU simulated with its share of the jobs.
func Inference(o InferenceOptions) (*InferenceReport, error) {
	if o.Instances == 0 {
		o.Instances = 3
	}
	if o.Requests == 0 {
		o.Requests = 100
	}
	if len(o.Schemes) == 0 {
		o.Schemes = InferenceSchemes
	}
	o.Modes = o.Modes.WithDefaults()
	trace, err := InferenceTrace(o.Instances, o.Requests, o.Seed)
	if err != nil {
		return nil, err
	}
	rep := &InferenceReport{Suite: "inference", Engine: "sim", Device: o.Device, Modes: o.Modes,
		Jobs: len(trace.Jobs), Requests: o.Requests, Seed: o.Seed}
	rep.Runs, err = parallel(len(o.Schemes), func(i int) (InferenceRun, error) {
		return inferenceRun(trace, o.Schemes[i], o)
	})
	if err != nil {
		return nil, err
	}
	gpus := map[string]int{}
	for _, r := range rep.Runs {
		gpus[r.Scheme] = r.GPUsNeeded
	}
	if salus := gpus[core.ModeSalus]; salus > 0 {
		rep.Papers = []Paper{
			{Claim: "GPUs to host the inference jobs, no sharing over Salus", Value: PaperInferenceVsExclusive, Measured: float64(gpus[core.ModeExclusive]) / float64(salus)},
			{Claim: "GPUs to host the inference jobs, MPS over Salus", Value: PaperInferenceVsMPS, Measured: float64(gpus[core.ModeMPS]) / float64(salus)},
		}
	}
	return rep, nil
}

func inferenceRun(trace *workload.Trace, s Scheme, o InferenceOptions) (InferenceRun, error) {
	p, err := core.Compose(s.Mode, s.Policy, o.Modes)
	if err != nil {
		return InferenceRun{}, err
	}
	groups, err := AssignGPUs(trace.Jobs, p, o.Device.CapacityMiB)
	if err != nil {
		return InferenceRun{}, err
	}
	latencies := map[string][]float64{}
	for g, jobs := range groups {
		c := metrics.NewCollector()
		t := &workload.Trace{Name: fmt.Sprintf("%s-gpu%d", trace.Name, g), Seed: trace.Seed, Jobs: jobs}
		// Each group is one GPU: the suite counts the GPUs it needs.
		if err := sim.Run(t, sim.Options{Policy: p, Device: o.Device, GPUs: 1, Sink: c}); err != nil {
			return InferenceRun{}, err
		}
		if _, err := c.Result(); err != nil {
			return InferenceRun{}, err
		}
		for m, ls := range c.Latencies() {
			latencies[m] = append(latencies[m], ls...)
		}
	}
	// Named by mode: each mode runs one policy here.
	run := InferenceRun{Scheme: s.Mode, GPUsNeeded: len(groups)}
	summary := metrics.SummarizeLatency(latencies)
	for _, m := range InferenceModels {
		prof, _ := workload.Default().Lookup(m, 1, workload.Infer)
		l := summary[m]
		run.Models = append(run.Models, ModelLatency{Model: m, Requests: l.Requests, MeanS: l.MeanS, P99S: l.P99S, AloneS: o.Device.IterS(prof.IterS)})
	}
	return run, nil
}

// AssignGPUs places jobs, in order, on as few GPUs as the policy's memory rule
// allows: each job goes to the first GPU that admits it beside the jobs already
// there. The rule is the scheduling core's own placement (a node of as many GPUs
// as jobs, placed first-fit), not a copy.
func AssignGPUs(jobs []workload.Job, p core.Policy, capacity float64) ([][]workload.Job, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	d := core.Uniform(len(jobs), capacity)
	d.Placement = core.FirstFit{}
	s, err := core.NewNode(p, d)
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if err := s.Arrive(0, j.CoreJob()); err != nil {
			return nil, err
		}
		// One at a time, so that each job sees the ones before it placed.
		if _, err := s.Decide(0); err != nil {
			return nil, err
		}
	}
	byGPU := map[int][]workload.Job{}
	for _, j := range jobs {
		gpus := s.JobGPUs(j.ID)
		if len(gpus) == 0 {
			return nil, fmt.Errorf("job %s does not fit an empty GPU under %s", j.ID, p.Mode)
		}
		byGPU[gpus[0]] = append(byGPU[gpus[0]], j)
	}
	var groups [][]workload.Job
	for _, g := range slices.Sorted(maps.Keys(byGPU)) {
		groups = append(groups, byGPU[g])
	}
	return groups, nil
}

// The inference suite: the paper's 42 inference jobs on as few GPUs as each scheme allows.
type inferenceSuite struct{}

func init() { Register(inferenceSuite{}) }

func (inferenceSuite) Name() string { return "inference" }
func (inferenceSuite) Description() string {
	return "42 inference jobs: GPUs needed and request latency per scheme"
}
func (inferenceSuite) AllOrder() int { return 3 }

// Reads: the inference suite's pauses are drawn with --seed; --trace (with
// --catalog) gives the study its jobs.
func (inferenceSuite) Reads() []string { return []string{"seed", "trace", "catalog"} }

// TraceOptional: without --trace the inference suite runs its own jobs.
func (inferenceSuite) TraceOptional() {}

// Schemes are the inference suite's schemes.
func (inferenceSuite) Schemes(Options) []Scheme { return InferenceSchemes }

// AddFlags defines --requests and the study's flags.
func (inferenceSuite) AddFlags(f *pflag.FlagSet, o *Options) {
	f.IntVar(&o.Inference.Requests, "requests", 100, "inference: requests per job")
	f.DurationVar(&o.Inference.SLOP99, "slo-p99", 0, "inference: the p99 request latency to meet (e.g. 50ms): answers how many GPUs each scheme needs for it (with --trace or --inference-jobs: your jobs; else the paper's 42)")
	f.IntVar(&o.Inference.Jobs, "inference-jobs", 0, "inference, with --slo-p99: this many jobs of the paper's 14 models in turn, batch 1 (0: the paper's 42)")
	f.Float64Var(&o.Inference.RequestRate, "request-rate", 0, "inference, with --inference-jobs: requests per second a job sends at most, its next one 1/R s after its last answer (0: the paper's pauses of 10-30 s)")
}

// CheckFlags checks them.
func (inferenceSuite) CheckFlags(o Options) error {
	in := o.Inference
	switch {
	case in.Requests < 1:
		return fmt.Errorf("--requests must be at least 1")
	case in.SLOP99 < 0:
		return fmt.Errorf("--slo-p99 must be positive (e.g. 50ms)")
	case in.Jobs < 0:
		return fmt.Errorf("--inference-jobs must be at least 1")
	case in.RequestRate < 0:
		return fmt.Errorf("--request-rate must be positive (requests per second a job)")
	case in.SLOP99 == 0 && (in.Jobs > 0 || o.OwnTrace()):
		return fmt.Errorf("--inference-jobs and --trace ask how many GPUs your inference jobs need: give the latency they must meet, --slo-p99 (e.g. 50ms)")
	case in.RequestRate > 0 && in.Jobs == 0:
		return fmt.Errorf("--request-rate sets the rate of --inference-jobs' jobs: give --inference-jobs N (a trace's jobs pause as its pause_s column says)")
	case in.Jobs > 0 && o.OwnTrace():
		return fmt.Errorf("--inference-jobs and --trace both give the jobs: give one")
	}
	return nil
}

func (inferenceSuite) Run(o Options) (Result, error) {
	in := o.Inference
	if o.Seed != 0 {
		in.Seed = o.Seed
	}
	in.Device, in.Modes = o.Device, o.Modes
	if in.Requests < 0 {
		return nil, fmt.Errorf("the inference suite's requests must be at least 1")
	}
	if in.SLOP99 > 0 {
		if o.OwnTrace() {
			in.Trace = o.Training.Trace
		}
		rep, err := InferenceStudy(in)
		if err != nil {
			return nil, err
		}
		return rep, nil
	}
	rep, err := Inference(in)
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// SuiteName is "inference".
func (r *InferenceReport) SuiteName() string { return r.Suite }

// Headlines are the GPUs saved, beside the paper's.
func (r *InferenceReport) Headlines() []Headline {
	var out []Headline
	for _, h := range r.Papers {
		why := "no sharing needs a GPU per job; one Salus lane holds every job's persistent memory plus the largest ephemeral peak"
		if strings.Contains(h.Claim, "MPS") {
			why = fmt.Sprintf("MPS here is bound by its %d-client limit (pre-Volta), each client holding its measured peak plus %.0f MiB; the paper's 6 GPUs are 7 clients a GPU: TensorFlow holds a share of GPU memory per process, not its peak (--mps-context-mib 1500 gives 6 GPUs; docs/evaluation.md, The paper, figure by figure)",
				r.Modes.MPSMaxClients, r.Modes.MPSContextMiB)
		}
		out = append(out, Headline{Claim: "inference: " + h.Claim, Paper: h.Value, Measured: h.Measured, Explanation: explain(h.Value, h.Measured, why)})
	}
	return out
}
