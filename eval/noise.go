package eval

import (
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/salusgo/salus/history"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/workload"
)

// Live runs and their noise. A live run times real processes on a machine
// that other work may share, so two runs of the same jobs differ by more than
// their policies. A run's own log says how much: an iteration during which no
// other job's iteration ran (history.Job.SoloIterS) takes the job's time
// alone, the same in every run and under every policy on a machine that is
// not busy. Noise is how far those times moved across the runs: when they
// moved more than the lead being judged, the lead may be the machine's, and
// Recommend counts it as within the noise.

// Noise is the largest spread, across runs, of a job type's median iteration
// time alone.
type Noise struct {
	// Spread is (High - Low) / Low; 0: no job type was timed alone in two runs.
	Spread float64 `json:"spread"`
	// Type is the job type (model, batch size, kind) it was measured on, and Low
	// and High its median iteration times alone in the fastest and slowest run,
	// seconds, of Runs runs.
	Type  string  `json:"job_type,omitempty"`
	LowS  float64 `json:"low_s,omitempty"`
	HighS float64 `json:"high_s,omitempty"`
	Runs  int     `json:"runs,omitempty"`
}

// minSolo is how many iterations alone a job type needs in a run for its
// median there to count.
const minSolo = 3

// NoiseOfLogs measures the noise of the runs whose event logs are paths.
func NoiseOfLogs(paths []string) (Noise, error) {
	byType := map[string][]float64{} // job type: each run's median
	for _, p := range paths {
		l, err := history.Read(p)
		if err != nil {
			return Noise{}, err
		}
		solo := map[string][]float64{}
		for _, j := range l.Jobs {
			k := workload.Key(j.Model, j.Batch, j.Kind)
			solo[k] = append(solo[k], j.SoloCycleS...)
		}
		for k, xs := range solo {
			if len(xs) >= minSolo {
				byType[k] = append(byType[k], history.Median(xs))
			}
		}
	}
	var n Noise
	for _, k := range slices.Sorted(maps.Keys(byType)) {
		ms := byType[k]
		if len(ms) < 2 {
			continue
		}
		lo, hi := slices.Min(ms), slices.Max(ms)
		if lo <= 0 {
			continue
		}
		if s := (hi - lo) / lo; s > n.Spread {
			n = Noise{Spread: s, Type: k, LowS: lo, HighS: hi, Runs: len(ms)}
		}
	}
	return n, nil
}

// Says is the noise in words, for the lead it exceeds ("" : none measured).
func (n Noise) Says() string {
	if n.Spread <= 0 {
		return ""
	}
	return fmt.Sprintf("%s's iterations alone took a median of %.3g to %.3g ms across %d runs (%.0f%% apart)",
		strings.TrimSuffix(n.Type, "/train"), n.LowS*1e3, n.HighS*1e3, n.Runs, 100*n.Spread)
}

// lead is the relative lead of best over second on c.
func lead(c Criterion, best, second float64) float64 {
	if c.Higher {
		return (best - second) / second
	}
	return (second - best) / second
}

// BusyWarning says when the machine was busy: the noise exceeded the lead on
// a criterion the candidates were judged on; "" otherwise.
func BusyWarning(n Noise, cands []Candidate) string {
	if n.Spread <= 0 || len(cands) < 2 {
		return ""
	}
	var over []string
	for _, c := range Criteria {
		var vals []float64
		for _, cand := range cands {
			if e, ok := cand.Metrics[c.Key]; ok && e.Mean > 0 && !math.IsNaN(e.Mean) {
				vals = append(vals, e.Mean)
			}
		}
		if len(vals) < 2 {
			continue
		}
		slices.Sort(vals)
		best, second := vals[0], vals[1]
		if c.Higher {
			best, second = vals[len(vals)-1], vals[len(vals)-2]
		}
		if l := lead(c, best, second); l < n.Spread {
			over = append(over, fmt.Sprintf("%s (%.1f%%)", shortName(c), 100*l))
		}
	}
	if len(over) == 0 {
		return ""
	}
	return fmt.Sprintf("Warning: the machine was busy: %s, more than the lead on %s; those leads are counted as within the noise. Run again on a quieter machine, or --repeat N.",
		n.Says(), strings.Join(over, ", "))
}

// Repeated is what --repeat N gives a scheme: each metric's mean and 95%
// interval over the repeats (MeanInterval, as a sweep's cells across seeds),
// and each repeat's value.
type Repeated struct {
	Scheme   string               `json:"scheme"`
	Metrics  map[string]Estimate  `json:"metrics"`
	PerRun   map[string][]float64 `json:"per_repeat"`
	Repeats  int                  `json:"repeats"`
	Failures int                  `json:"failed,omitempty"`
}

// Repeats is a live suite's runs repeated: N of each scheme, interleaved (each
// repeat runs every scheme before the next begins, so that repeat i of two
// schemes saw the machine at about the same time: Recommend pairs them).
type Repeats struct {
	N       int        `json:"n"`
	Method  string     `json:"interval_method"`
	Schemes []Repeated `json:"schemes"`
	Noise   Noise      `json:"noise"`
	// Recommendation judges the leads repeat by repeat (paired, clear of zero
	// or not) and against the noise; Busy warns when the noise exceeded a lead.
	Recommendation string `json:"recommendation,omitempty"`
	Busy           string `json:"busy_warning,omitempty"`
}

// repeatKeys are the metrics a repeat summarizes.
var repeatKeys = []string{"makespan_s", "avg_jct_s", "p95_jct_s", "jain_slowdown", "max_slowdown"}

func metricOf(r metrics.Result, key string) float64 {
	switch key {
	case "makespan_s":
		return r.MakespanS
	case "avg_jct_s":
		return r.AvgJCTS
	case "p95_jct_s":
		return r.P95JCTS
	case "jain_slowdown":
		return r.JainSlowdown
	case "max_slowdown":
		return r.MaxSlowdown
	}
	return math.NaN()
}

// Summarize is the repeats of each scheme: runs[i] are repeat i's results by
// scheme, in schemes' order (a scheme missing from a repeat failed there); u
// shows the recommendation's times.
func Summarize(schemes []string, runs []map[string]metrics.Result, noise Noise, u TimeUnit) *Repeats {
	rep := &Repeats{N: len(runs), Method: IntervalMethod, Noise: noise}
	var cands []Candidate
	for _, s := range schemes {
		r := Repeated{Scheme: s, Metrics: map[string]Estimate{}, PerRun: map[string][]float64{}}
		per := map[string]map[int64]float64{}
		for i, byScheme := range runs {
			res, ok := byScheme[s]
			if !ok {
				r.Failures++
				continue
			}
			r.Repeats++
			for _, k := range repeatKeys {
				v := metricOf(res, k)
				r.PerRun[k] = append(r.PerRun[k], v)
				if per[k] == nil {
					per[k] = map[int64]float64{}
				}
				per[k][int64(i)] = v
			}
		}
		for _, k := range repeatKeys {
			if xs := r.PerRun[k]; len(xs) > 0 {
				m, lo, hi := MeanInterval(xs)
				r.Metrics[k] = Estimate{Mean: m, Low: lo, High: hi}
			}
		}
		rep.Schemes = append(rep.Schemes, r)
		cands = append(cands, Candidate{Scheme: s, Metrics: r.Metrics, PerSeed: per})
	}
	rep.Recommendation = RecommendNoisy(cands, u, noise)
	rep.Busy = BusyWarning(noise, cands)
	return rep
}

// RepeatTraining runs the training suite's options n times on a live engine,
// every scheme in each repeat before the next repeat, and summarizes the
// repeats (Summarize): the report's runs are the first repeat's, its
// recommendation the repeats'. Each repeat's logs go to OutDir/repeat-I (a
// temporary folder without OutDir: the noise is read from them).
func RepeatTraining(o TrainingOptions, n int) (*Report, error) {
	base := o.OutDir
	if base == "" {
		dir, err := os.MkdirTemp("", "salus-repeat-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		base = dir
	}
	var first *Report
	var firstErr error
	var results []map[string]metrics.Result
	var logs []string
	for i := range n {
		t := o
		t.OutDir = filepath.Join(base, fmt.Sprintf("repeat-%d", i+1))
		if err := os.MkdirAll(t.OutDir, 0o755); err != nil {
			return nil, err
		}
		rep, err := Training(t)
		if rep == nil {
			return nil, err
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
		byScheme := map[string]metrics.Result{}
		for _, run := range rep.Runs {
			if run.Error == "" {
				byScheme[run.Scheme] = run.Result
				if run.Log != "" {
					logs = append(logs, run.Log)
				}
			}
		}
		results = append(results, byScheme)
		if first == nil {
			first = rep
		}
		if o.Warnings != nil {
			fmt.Fprintf(o.Warnings, "repeat %d of %d done\n", i+1, n)
		}
	}
	noise, err := NoiseOfLogs(logs)
	if err != nil {
		return nil, err
	}
	var schemes []string
	for _, run := range first.Runs {
		schemes = append(schemes, run.Scheme)
	}
	first.Repeats = Summarize(schemes, results, noise, first.Unit())
	first.Recommendation, first.Busy = first.Repeats.Recommendation, first.Repeats.Busy
	first.Noise = &first.Repeats.Noise
	if o.OutDir == "" { // the logs are gone with the temporary folder
		for i := range first.Runs {
			first.Runs[i].Log = ""
		}
	}
	return first, firstErr
}

// Table prints each scheme's mean and interval over the repeats.
func (r *Repeats) Table(w io.Writer, u TimeUnit) error {
	note := fmt.Sprintf("Over %d repeats of each scheme, interleaved (the table above is repeat 1): mean [95%% confidence interval], %s of the mean as a sweep's across seeds (docs/comparing.md)", r.N, IntervalMethod)
	if r.N < IntervalFewSeeds {
		note += "; under 10 repeats an interval covers less than 95% of the time"
	}
	fmt.Fprintf(w, "\n%s\n\n", Wrap(note+".", 100))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "scheme\trepeats\tmakespan (%[1]s)\tavg JCT (%[1]s)\tp95 JCT (%[1]s)\tJain\t\n", u.Name)
	cell := func(e Estimate, scale float64, prec int) string {
		if e.Mean == 0 || math.IsNaN(e.Mean) {
			return "-"
		}
		return fmt.Sprintf("%.*f [%.*f, %.*f]", prec, e.Mean*scale, prec, e.Low*scale, prec, e.High*scale)
	}
	for _, s := range r.Schemes {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t\n", s.Scheme, s.Repeats, cell(s.Metrics["makespan_s"], u.Scale, 2),
			cell(s.Metrics["avg_jct_s"], u.Scale, 2), cell(s.Metrics["p95_jct_s"], u.Scale, 2), cell(s.Metrics["jain_slowdown"], 1, 3))
	}
	return tw.Flush()
}
