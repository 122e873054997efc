package eval

import (
	"encoding/csv"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/sim"
	"github.com/salusgo/salus/workload"
)

// The inference suite as a study of the user's own jobs: how many GPUs each
// scheme needs to serve them within a p99 latency SLO, and the latencies it
// gives there. The jobs are the user's trace of inference jobs, or a count of
// jobs of the paper's 14 models at a request rate. For each scheme the
// simulator runs the jobs on a node of G GPUs, G from the fewest that host
// every job at once (the memory rule, AssignGPUs) upwards: the answer is the
// first G at which every job is hosted on arrival (none waits for a lane: an
// inference server that waits is not serving) and the p99 of every request of
// every job is within the SLO. The latency of a request runs from the request
// (after its pause) to its answer, as the simulator logs it (Served events).

// InferenceStudy is the study of InferenceOptions' jobs against SLOP99.
func InferenceStudy(o InferenceOptions) (*InferenceStudyReport, error) {
	if o.SLOP99 <= 0 {
		return nil, fmt.Errorf("the inference study needs a p99 latency SLO (--slo-p99, e.g. 50ms)")
	}
	if len(o.Schemes) == 0 {
		o.Schemes = InferenceSchemes
	}
	if o.Requests == 0 {
		o.Requests = 100
	}
	o.Modes = o.Modes.WithDefaults()
	trace, source, err := studyTrace(o)
	if err != nil {
		return nil, err
	}
	requests := 0
	for _, j := range trace.Jobs {
		requests += j.Iterations
	}
	rep := &InferenceStudyReport{Suite: "inference", Engine: "sim", Device: o.Device, Modes: o.Modes, Jobs: len(trace.Jobs),
		Source: source, Requests: requests, SLOP99S: o.SLOP99.Seconds(), Seed: o.Seed}
	for _, j := range trace.Jobs {
		if j.Profile == nil {
			continue
		}
		if s := o.Device.IterS(j.Profile.IterS); s > rep.SlowestAloneS {
			rep.SlowestAloneS, rep.SlowestModel = s, j.Model
		}
	}
	rep.Runs, err = parallel(len(o.Schemes), func(i int) (InferenceStudyRun, error) {
		return studyScheme(trace, o.Schemes[i], o)
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// studyTrace is the study's jobs and a line saying where they come from: the
// inference jobs of o.Trace, or o.Jobs jobs of InferenceModels in turn.
func studyTrace(o InferenceOptions) (*workload.Trace, string, error) {
	if o.Trace != nil {
		t := &workload.Trace{Name: o.Trace.Name, Seed: o.Trace.Seed}
		for _, j := range o.Trace.Jobs {
			if j.Kind == workload.Infer {
				t.Jobs = append(t.Jobs, j)
			}
		}
		if len(t.Jobs) == 0 {
			return nil, "", fmt.Errorf("trace %s: none of its %d jobs is an inference job: the inference suite serves jobs of kind infer (the trace's kind column, docs/traces.md); give --suite training for training jobs",
				o.Trace.Name, len(o.Trace.Jobs))
		}
		src := fmt.Sprintf("trace %s: %d inference jobs", t.Name, len(t.Jobs))
		if left := len(o.Trace.Jobs) - len(t.Jobs); left > 0 {
			src += fmt.Sprintf(" (its %d training jobs left out)", left)
		}
		return t, src, nil
	}
	n := o.Jobs
	if n == 0 {
		n = o.Instances * len(InferenceModels)
		if n == 0 {
			n = 3 * len(InferenceModels)
		}
	}
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 42))
	t := &workload.Trace{Name: fmt.Sprintf("inference-%d", n), Seed: o.Seed}
	for i := range n {
		m := InferenceModels[i%len(InferenceModels)]
		p, err := workload.Default().Lookup(m, 1, workload.Infer)
		if err != nil {
			return nil, "", err
		}
		pause := InferencePauses[rng.IntN(len(InferencePauses))]
		if o.RequestRate > 0 {
			pause = 1 / o.RequestRate
		}
		t.Jobs = append(t.Jobs, workload.Job{ID: fmt.Sprintf("%s-%d", m, i/len(InferenceModels)+1), Model: m, Batch: 1, Kind: workload.Infer,
			Iterations: o.Requests, PauseS: pause, Profile: &p})
	}
	rate := "pauses of 10, 20 or 30 s between requests, drawn per job (the paper's)"
	if o.RequestRate > 0 {
		rate = fmt.Sprintf("each job's next request %.4g s after its last answer (--request-rate %g: at most %g requests/s a job)", 1/o.RequestRate, o.RequestRate, o.RequestRate)
	}
	return t, fmt.Sprintf("%d inference jobs of the paper's %d models in turn, batch 1, %d requests each; %s", n, len(InferenceModels), o.Requests, rate), nil
}

// studyScheme searches the GPU counts for scheme s.
func studyScheme(trace *workload.Trace, s Scheme, o InferenceOptions) (InferenceStudyRun, error) {
	p, err := core.Compose(s.Mode, s.Policy, o.Modes)
	if err != nil {
		return InferenceStudyRun{}, err
	}
	groups, err := AssignGPUs(trace.Jobs, p, o.Device.CapacityMiB)
	if err != nil {
		return InferenceStudyRun{}, err
	}
	run := InferenceStudyRun{Scheme: s.Mode, Policy: s.Policy, GPUsToHost: len(groups)}
	slo := o.SLOP99.Seconds()
	for g := len(groups); g <= len(trace.Jobs); g++ {
		lat, hosted, err := inferenceOn(trace, p, o.Device, g)
		if err != nil {
			return run, err
		}
		run.Tried = g
		if !hosted {
			continue
		}
		run.Requests = len(lat)
		run.MeanS, run.P50S, run.P99S = meanOf(lat), metrics.Percentile(lat, 0.50), metrics.Percentile(lat, 0.99)
		if run.P99S <= slo {
			run.GPUsNeeded, run.MetSLO = g, true
			break
		}
	}
	return run, nil
}

// inferenceOn runs the jobs on a node of gpus GPUs and returns every request's
// latency, and whether every job was admitted as it arrived.
func inferenceOn(trace *workload.Trace, p core.Policy, dev device.Device, gpus int) ([]float64, bool, error) {
	c := metrics.NewCollector()
	w := &admitWatch{sink: c, arrive: map[string]float64{}}
	if err := sim.Run(trace, sim.Options{Policy: p, Device: dev, GPUs: gpus, Sink: w}); err != nil {
		return nil, false, err
	}
	if _, err := c.Result(); err != nil {
		return nil, false, err
	}
	var lat []float64
	for _, ls := range c.Latencies() {
		lat = append(lat, ls...)
	}
	slices.Sort(lat)
	return lat, !w.waited, nil
}

// admitWatch passes events on to sink and notes whether a job was admitted
// later than it arrived.
type admitWatch struct {
	sink   eventlog.Sink
	arrive map[string]float64
	waited bool
}

func (a *admitWatch) Emit(e eventlog.Event) {
	switch e.Kind {
	case eventlog.Arrive:
		a.arrive[e.Job] = e.T
	case eventlog.Admit:
		if t, ok := a.arrive[e.Job]; ok && e.T > t+1e-9 {
			a.waited = true
		}
	}
	a.sink.Emit(e)
}

func meanOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// InferenceStudyRun is one scheme's answer.
type InferenceStudyRun struct {
	Scheme string `json:"scheme"`
	Policy string `json:"policy"`
	// GPUsToHost is the fewest GPUs that hold every job at once (its memory
	// rule); GPUsNeeded the fewest at which the p99 meets the SLO too (0: at no
	// count up to one GPU a job).
	GPUsToHost int  `json:"gpus_to_host"`
	GPUsNeeded int  `json:"gpus_needed"`
	MetSLO     bool `json:"slo_met"`
	// Tried is the GPU count of the latencies: GPUsNeeded, or the most tried.
	Tried    int     `json:"latency_at_gpus"`
	Requests int     `json:"requests"`
	MeanS    float64 `json:"latency_mean_s"`
	P50S     float64 `json:"latency_p50_s"`
	P99S     float64 `json:"latency_p99_s"`
}

// InferenceStudyReport is the inference suite's answer for the user's jobs.
type InferenceStudyReport struct {
	Suite  string          `json:"suite"`
	Engine string          `json:"engine"`
	Device device.Device   `json:"device"`
	Modes  core.ModeParams `json:"modes"`
	// Source says what the jobs are.
	Source   string  `json:"source"`
	Jobs     int     `json:"jobs"`
	Requests int     `json:"requests"`
	SLOP99S  float64 `json:"slo_p99_s"`
	// SlowestAloneS is the longest request of any job alone on the device (of
	// SlowestModel): an SLO under it is met by no scheme.
	SlowestAloneS float64             `json:"slowest_alone_s"`
	SlowestModel  string              `json:"slowest_model"`
	Seed          int64               `json:"seed,omitempty"`
	Runs          []InferenceStudyRun `json:"runs"`
}

// SuiteName is "inference".
func (r *InferenceStudyReport) SuiteName() string { return r.Suite }

// Headlines: the user's jobs are not the paper's.
func (r *InferenceStudyReport) Headlines() []Headline { return nil }

// Table prints the answer per scheme.
func (r *InferenceStudyReport) Table(w io.Writer) error {
	fmt.Fprintf(w, "%s\n%s\n", Wrap(fmt.Sprintf("Suite inference on %s: %s; device %s", r.Engine, r.Source, r.Device.Describe()), 100), coLocation(r.Device))
	fmt.Fprintf(w, "SLO: p99 latency at most %s over all %d requests of the %d jobs; each scheme on the fewest GPUs that host every job at once and meet it.\n\n",
		fmtDur(r.SLOP99S), r.Requests, r.Jobs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "scheme\tGPUs needed\tGPUs to host\tp50 (ms)\tp99 (ms)\tmean (ms)\t\n")
	for _, run := range r.Runs {
		needed := strconv.Itoa(run.GPUsNeeded)
		if !run.MetSLO {
			needed = fmt.Sprintf("not met (%d tried)", run.Tried)
		}
		if run.Requests == 0 {
			fmt.Fprintf(tw, "%s\t%s\t%d\t-\t-\t-\t\n", run.Scheme, needed, run.GPUsToHost)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f\t%.1f\t\n", run.Scheme, needed, run.GPUsToHost, run.P50S*1e3, run.P99S*1e3, run.MeanS*1e3)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nGPUs to host: the fewest that hold every job at once (memory; MPS's client limit). Latencies at the GPUs needed,")
	fmt.Fprintln(w, "or, where no count meets the SLO, at one GPU a job (a request from its send to its answer).")
	if r.SLOP99S < r.SlowestAloneS {
		fmt.Fprintf(w, "No scheme can meet it: a request of %s takes %.1f ms alone on this device, more than the SLO.\n", r.SlowestModel, r.SlowestAloneS*1e3)
	}
	return nil
}

func fmtDur(s float64) string { return time.Duration(s * float64(time.Second)).String() }

// JSON prints the report as one indented JSON object.
func (r *InferenceStudyReport) JSON(w io.Writer) error { return writeJSON(w, r) }

// CSV prints one line per scheme.
func (r *InferenceStudyReport) CSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"suite", "scheme", "slo_p99_s", "gpus_to_host", "gpus_needed", "slo_met", "latency_at_gpus", "requests", "latency_p50_s", "latency_p99_s", "latency_mean_s"})
	for _, run := range r.Runs {
		cw.Write([]string{r.Suite, run.Scheme, num(r.SLOP99S), strconv.Itoa(run.GPUsToHost), strconv.Itoa(run.GPUsNeeded), strconv.FormatBool(run.MetSLO),
			strconv.Itoa(run.Tried), strconv.Itoa(run.Requests), num(run.P50S), num(run.P99S), num(run.MeanS)})
	}
	cw.Flush()
	return cw.Error()
}
