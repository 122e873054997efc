package eval

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/metrics"
)

// TimeUnit is the unit a report shows times in (metrics.UnitFor chooses it).
type TimeUnit = metrics.TimeUnit

// runColumn is one column of the training table: its header (%s: the time unit),
// its value, and whether only the wide table (-o wide) shows it.
type runColumn struct {
	head  string
	value func(r Run, u TimeUnit) string
	wide  bool
	// gpus: shown only where a run had several GPUs.
	gpus bool
}

// busyPerGPU is the least and the most busy of a run's GPUs, "60-92%"
// (metrics.Result.BusyRange).
func busyPerGPU(r Run, _ TimeUnit) string {
	lo, hi, ok := r.BusyRange()
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.0f-%.0f%%", lo*100, hi*100)
}

func minutes(get func(Run) float64) func(Run, TimeUnit) string {
	return func(r Run, u TimeUnit) string { return fmt.Sprintf("%.1f", get(r)*u.Scale) }
}

// runColumns are the training table's columns. The default table fits 120
// characters; -o wide adds the rest, as kubectl's does.
var runColumns = []runColumn{
	{head: "scheme", value: func(r Run, _ TimeUnit) string { return r.Scheme }},
	{head: "mode", value: func(r Run, _ TimeUnit) string { return r.Mode }},
	{head: "makespan", value: minutes(func(r Run) float64 { return r.MakespanS })},
	{head: "queuing", value: minutes(func(r Run) float64 { return r.AvgQueuingS })},
	{head: "avg JCT", value: minutes(func(r Run) float64 { return r.AvgJCTS })},
	{head: "p95 JCT", value: minutes(func(r Run) float64 { return r.P95JCTS })},
	{head: "GPU busy", value: func(r Run, _ TimeUnit) string { return fmt.Sprintf("%.0f%%", r.GPUBusy*100) }},
	{head: "per GPU", value: busyPerGPU, gpus: true},
	{head: "JCT/fifo", value: func(r Run, _ TimeUnit) string { return ratio(r.JCTSpeedup) }},
	{head: "makespan/fifo", value: func(r Run, _ TimeUnit) string { return ratio(r.MakespanSpeedup) }, wide: true},
	{head: "JCT/bound", value: func(r Run, _ TimeUnit) string { return ratio(r.JCTVsBound) }},
	{head: "makespan/bound", value: func(r Run, _ TimeUnit) string { return ratio(r.MakespanVsBound) }, wide: true},
	{head: "Jain", value: func(r Run, _ TimeUnit) string { return jain(r.JainSlowdown) }},
	{head: "worst slowdown", value: func(r Run, _ TimeUnit) string { return ratio(r.MaxSlowdown) }, wide: true},
}

// Unit is the time unit of the report's tables.
func (r *Report) Unit() TimeUnit {
	longest := 0.0
	for _, run := range r.Runs {
		longest = max(longest, run.MakespanS, run.P95JCTS)
	}
	return metrics.UnitFor(longest)
}

// Table prints the report for people, in at most 120 columns: times in the
// report's unit, ratios to fifo and to the lower bound, fairness.
func (r *Report) Table(w io.Writer) error { return r.table(w, false) }

// WideTable is Table with every column (-o wide).
func (r *Report) WideTable(w io.Writer) error { return r.table(w, true) }

func (r *Report) table(w io.Writer, wide bool) error {
	seed := "" // a trace file has no seed, unless it was resampled
	if r.Trace.SeedUsed() {
		seed = fmt.Sprintf(", seed %d", r.Trace.Seed)
	}
	fmt.Fprintf(w, "Suite %s on %s: trace %s (%d jobs%s), device %s\n",
		r.Suite, r.Engine, r.Trace.Name, r.Trace.Jobs, seed, r.Device.Describe())
	if l := r.Device.CoLocationLine(); l != "" {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w)
	if r.Cluster != "" {
		fmt.Fprintf(w, "The runs are on the cluster of %s (its GPUs' models, memory and speeds); the device is the reference of declared and alone times.\n", r.Cluster)
	}
	if r.Trace.Resample != "" {
		fmt.Fprintf(w, "The trace is a %s resample of the file (seed %d), not the file as it is.\n", r.Trace.Resample, r.Trace.Seed)
	}
	if r.Trace.Load != 0 {
		fmt.Fprintf(w, "Arrival times are the file's divided by %g (--load %g): the jobs arrive %gx as fast.\n", r.Trace.Load, r.Trace.Load, r.Trace.Load)
	}
	if r.Trace.Resample != "" || r.Trace.Load != 0 {
		fmt.Fprintln(w)
	}
	u := r.Unit()
	several := slices.ContainsFunc(r.Runs, func(run Run) bool { return len(run.PerGPU) > 1 })
	var cols []runColumn
	for _, c := range runColumns {
		if (wide || !c.wide) && (several || !c.gpus) {
			cols = append(cols, c)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, c := range cols {
		fmt.Fprint(tw, c.head, "\t")
	}
	fmt.Fprintln(tw)
	var failed []Run
	unknown := 0
	for _, run := range r.Runs {
		for i, c := range cols {
			v := c.value(run, u)
			if run.Error != "" && i >= 2 {
				v = "-"
				if i == 2 {
					v = "failed"
				}
			}
			fmt.Fprint(tw, v, "\t")
		}
		fmt.Fprintln(tw)
		if run.Error != "" {
			failed = append(failed, run)
			continue
		}
		unknown += run.SlowdownUnknown
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	legend := fmt.Sprintf("Times in %s. JCT/fifo and makespan/fifo: fifo's figure over the scheme's (above 1 is better); /bound: the scheme's over the lower bound; Jain: of the jobs' slowdowns (1 = all slowed alike).", u.Word())
	if several {
		legend += " Per GPU: the least and the most busy GPU (a job keeps the GPU it was placed on; --migrate moves a waiting one)."
	}
	if !wide {
		legend += " -o wide adds makespan/fifo, makespan/bound and the worst slowdown."
	}
	fmt.Fprintf(w, "\n%s\n", Wrap(legend, 100))
	r.boundLine(w)
	if err := r.classTable(w); err != nil {
		return err
	}
	if err := r.predictedTable(w, u); err != nil {
		return err
	}
	for _, run := range failed {
		fmt.Fprintf(w, "\n%s failed: %s\n", run.Scheme, run.Error)
	}
	if unknown > 0 {
		fmt.Fprintf(w, "\n%d job runs have no slowdown: their event logs do not give the job's time alone (alone_s), and fairness leaves them out.\n", unknown)
	}
	if r.Repeats != nil {
		if err := r.Repeats.Table(w, u); err != nil {
			return err
		}
	}
	if r.Recommendation != "" {
		fmt.Fprintf(w, "\n%s\n", Wrap(r.Recommendation, 100))
	}
	if r.Busy != "" {
		fmt.Fprintf(w, "\n%s\n", Wrap(r.Busy, 100))
	}
	if r.Paper.Measured > 0 {
		fmt.Fprintf(w, "\n%s\n", Wrap(r.paperLine(), 100))
	}
	return nil
}

// paperLine puts the paper's headline beside this run's, saying what this run
// was: one trace, one seed, the start-up on the GPU or not. The README's Table 1
// row is another experiment (salus eval --suite paper: the median over seeds,
// the start-up on the GPU as TensorFlow's was), and one seed's ratio lies
// anywhere in that experiment's wide range.
func (r *Report) paperLine() string {
	trace := cmp.Or(r.Trace.Kind, r.Trace.Name) // a generated trace's name carries its seed
	if r.Trace.SeedUsed() {
		trace += fmt.Sprintf(", seed %d", r.Trace.Seed)
	}
	startup := "start-up off the GPU, which --startup-on-gpu puts on it"
	if r.Device.StartupIsGPUWork {
		startup = "start-up on the GPU"
	}
	return fmt.Sprintf("Paper: %s %.2fx (TensorFlow, its start-up on the GPU). Measured here on this one trace (%s; %s): %.2fx. "+
		"One trace's ratio moves widely with its seed: the README's Table 1 row is salus eval --suite paper's median over seeds 1 to %d, start-up on the GPU.",
		r.Paper.Claim, r.Paper.Value, trace, startup, r.Paper.Measured, PaperSeeds)
}

func jain(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", x)
}

// Wrap breaks text into lines of at most width characters, at spaces.
func Wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(text) {
		if i > 0 && n+1+len(word) > width {
			b.WriteByte('\n')
			n = 0
		} else if i > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}

func ratio(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", x)
}

// JSON prints the report as one indented JSON object.
func (r *Report) JSON(w io.Writer) error { return writeJSON(w, r) }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// CSV prints one line per run.
func (r *Report) CSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"suite", "engine", "trace", "seed", "scheme", "policy", "mode", "jobs", "makespan_s", "avg_jct_s", "p95_jct_s",
		"avg_queuing_s", "gpu_busy", "avg_jct_speedup_vs_fifo", "makespan_speedup_vs_fifo", "error", "jain_slowdown", "max_slowdown",
		"avg_jct_vs_bound", "makespan_vs_bound", "bound_avg_jct_s", "bound_makespan_s"})
	var bAvg, bSpan string
	if r.Bound != nil {
		bAvg, bSpan = num(r.Bound.AvgJCTS), num(r.Bound.MakespanS)
	}
	for _, run := range r.Runs {
		cw.Write([]string{r.Suite, r.Engine, r.Trace.Name, strconv.FormatInt(r.Trace.Seed, 10), run.Scheme, run.Policy, run.Mode,
			strconv.Itoa(run.Jobs), num(run.MakespanS), num(run.AvgJCTS), num(run.P95JCTS), num(run.AvgQueuingS),
			num(run.GPUBusy), num(run.JCTSpeedup), num(run.MakespanSpeedup), run.Error, num(run.JainSlowdown), num(run.MaxSlowdown),
			num(run.JCTVsBound), num(run.MakespanVsBound), bAvg, bSpan})
	}
	cw.Flush()
	return cw.Error()
}

// JobsCSV prints one line per job of each run that did not fail: its arrival,
// end, JCT, queuing, time alone and slowdown (empty when its log gives no time
// alone), in seconds; then its first service (when it first got the GPU) and
// how many GPUs it was admitted on. A lost job has lost set and no slowdown.
func (r *Report) JobsCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"scheme", "policy", "mode", "job_id", "model", "arrival_s", "end_s", "jct_s", "queuing_s", "alone_s", "slowdown", "lost", "service_s", "gpus"})
	for _, run := range r.Runs {
		for _, j := range run.Completion {
			alone, slow := "", ""
			if j.Slowdown > 0 {
				alone, slow = num(j.AloneS), num(j.Slowdown)
			}
			cw.Write([]string{run.Scheme, run.Policy, run.Mode, j.ID, j.Model, num(j.ArrivalS), num(j.EndS), num(j.JCTS), num(j.QueuingS),
				alone, slow, strconv.FormatBool(j.Lost), num(j.ServiceS), strconv.Itoa(j.GPUs)})
		}
	}
	cw.Flush()
	return cw.Error()
}

// coLocation is the device's co-location line (Device.CoLocationLine) with
// its newline, or nothing under today's rule.
func coLocation(d device.Device) string {
	if l := d.CoLocationLine(); l != "" {
		return l + "\n"
	}
	return ""
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', 6, 64) }

// Table prints the tuning suite: each workload's makespan per scheme against one by one.
func (r *TuningReport) Table(w io.Writer) error {
	length := "each as long alone as the paper's one-by-one makespan / 300"
	if r.Iterations > 0 {
		length = fmt.Sprintf("of %d iterations", r.Iterations)
	}
	what := fmt.Sprintf("the paper's sets, %d jobs per set %s, submitted at once", r.Jobs, length)
	if r.Trace != "" {
		what = fmt.Sprintf("trace %s, %d configurations (jobs) at the trace's arrivals; one by one: their times alone, start-up included, back to back", r.Trace, r.Jobs)
	}
	fmt.Fprintf(w, "%s\n%s\n", Wrap(fmt.Sprintf("Suite tuning on %s: %s; device %s",
		r.Engine, what, r.Device.Describe()), 100), coLocation(r.Device))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tscheme\titerations\tmakespan (min)\tone by one (min)\timprovement\tpaper\tGPU busy\t")
	for _, run := range r.Runs {
		paper := ""
		if run.PaperImprovement > 0 {
			paper = fmt.Sprintf("%.2fx", run.PaperImprovement)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.1f\t%.2fx\t%s\t%.0f%%\t\n", run.Workload, run.Scheme, run.Iterations, run.Makespan/60, run.SequentialS/60, run.Improvement, paper, run.GPUBusy*100)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Trace != "" {
		return nil
	}
	fmt.Fprintf(w, "\nPaper: %s %.2fx. Measured here: %.2fx.\n", r.Paper.Claim, r.Paper.Value, r.Paper.Measured)
	return nil
}

// JSON prints the report as one indented JSON object.
func (r *TuningReport) JSON(w io.Writer) error { return writeJSON(w, r) }

// CSV prints one line per workload and scheme.
func (r *TuningReport) CSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"suite", "workload", "scheme", "jobs", "makespan_s", "sequential_makespan_s", "improvement", "gpu_busy"})
	for _, run := range r.Runs {
		cw.Write([]string{r.Suite, run.Workload, run.Scheme, strconv.Itoa(run.Jobs), num(run.Makespan), num(run.SequentialS), num(run.Improvement), num(run.GPUBusy)})
	}
	cw.Flush()
	return cw.Error()
}

// Table prints the inference suite: GPUs needed per scheme, then latency per model.
func (r *InferenceReport) Table(w io.Writer) error {
	fmt.Fprintf(w, "%s\n%s\n", Wrap(fmt.Sprintf("Suite inference on %s: %d jobs (%d models x %d), %d requests each, batch 1; device %s",
		r.Engine, r.Jobs, len(InferenceModels), r.Jobs/len(InferenceModels), r.Requests, r.Device.Describe()), 100), coLocation(r.Device))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "model\talone (ms)\t")
	for _, run := range r.Runs {
		fmt.Fprintf(tw, "%s mean / p99 (ms)\t", run.Scheme)
	}
	fmt.Fprintln(tw)
	for i, m := range InferenceModels {
		fmt.Fprintf(tw, "%s\t%.2f\t", m, r.Runs[0].Models[i].AloneS*1e3)
		for _, run := range r.Runs {
			fmt.Fprintf(tw, "%.2f / %.2f\t", run.Models[i].MeanS*1e3, run.Models[i].P99S*1e3)
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "GPUs needed\t\t")
	for _, run := range r.Runs {
		fmt.Fprintf(tw, "%d\t", run.GPUsNeeded)
	}
	fmt.Fprintln(tw)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, h := range r.Papers {
		fmt.Fprintf(w, "Paper: %s %.0fx. Measured here: %.0fx.\n", h.Claim, h.Value, h.Measured)
	}
	return nil
}

// JSON prints the report as one indented JSON object.
func (r *InferenceReport) JSON(w io.Writer) error { return writeJSON(w, r) }

// CSV prints one line per scheme and model.
func (r *InferenceReport) CSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"suite", "scheme", "gpus_needed", "model", "requests", "latency_mean_s", "latency_p99_s", "latency_alone_s"})
	for _, run := range r.Runs {
		for _, m := range run.Models {
			cw.Write([]string{r.Suite, run.Scheme, strconv.Itoa(run.GPUsNeeded), m.Model, strconv.Itoa(m.Requests), num(m.MeanS), num(m.P99S), num(m.AloneS)})
		}
	}
	cw.Flush()
	return cw.Error()
}
