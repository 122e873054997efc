package workload

import (
	"fmt"
	"io"
	"math"
	"sort"
	"text/tabwriter"
)

// Stats summarizes what a trace asks of a GPU, before anything runs it.
type Stats struct {
	Name string `json:"name"`
	Jobs int    `json:"jobs"`
	// SpanS is from the first arrival to the last, seconds.
	SpanS float64 `json:"span_s"`
	// GPUS is the GPU time demanded: every iteration at its standalone time, on
	// each of the job's GPUs (a gang of 4 demands 4 GPU-seconds a second).
	GPUS float64 `json:"gpu_s"`
	// StandaloneS adds each job's start-up, on each of its GPUs: for one-GPU jobs,
	// the time the jobs take run one by one.
	StandaloneS float64 `json:"standalone_s"`
	// OfferedLoad is GPUS / SpanS, the GPUs the trace keeps busy on average: above
	// 1, one GPU without sharing cannot keep up with the arrivals (above N, N
	// GPUs). StandaloneLoad is the same with start-up counted, as the generator's
	// --load is defined. Both are 0 when all jobs arrive at once.
	OfferedLoad    float64 `json:"offered_load"`
	StandaloneLoad float64 `json:"standalone_load"`
	// GangJobs counts the jobs on more than one GPU, MaxGPUs is the widest job's
	// GPUs.
	GangJobs int `json:"gang_jobs"`
	MaxGPUs  int `json:"max_gpus"`
	// Models counts jobs per model (and batch size), Lengths per duration class
	// ("1min", "5min", "10min" when the job runs a measured length, else "other").
	Models  []Count `json:"models"`
	Lengths []Count `json:"lengths"`
	Kinds   []Count `json:"kinds"`
	// JobStandaloneS summarizes the jobs' standalone times.
	JobStandaloneS Summary `json:"job_standalone_s"`
	// Memory per job, MiB: persistent, ephemeral, and the Salus lane a job alone
	// would ask for, (1.1 persistent + ephemeral) * 1.05.
	PersistentMiB Summary `json:"persistent_mib"`
	EphemeralMiB  Summary `json:"ephemeral_mib"`
	LaneMiB       Summary `json:"lane_mib"`
	// TotalPersistentMiB is the memory every job's persistent state would need at
	// once: what keeping all of them resident (Salus's switching) would cost.
	TotalPersistentMiB float64 `json:"total_persistent_mib"`
}

// Count is how many jobs have a value.
type Count struct {
	Value string `json:"value"`
	Jobs  int    `json:"jobs"`
}

// Summary is the spread of a quantity over the jobs.
type Summary struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Mean   float64 `json:"mean"`
	Max    float64 `json:"max"`
}

// TraceStats computes a trace's summary.
func TraceStats(t *Trace) Stats {
	s := Stats{Name: t.Name, Jobs: len(t.Jobs)}
	if len(t.Jobs) == 0 {
		return s
	}
	models, lengths, kinds := map[string]int{}, map[string]int{}, map[string]int{}
	var standalone, persistent, ephemeral, lane []float64
	first, last := math.Inf(1), math.Inf(-1)
	for _, j := range t.Jobs {
		p := j.Profile
		first, last = math.Min(first, j.ArrivalS), math.Max(last, j.ArrivalS)
		g := j.GPUCount()
		s.GPUS += float64(g) * float64(j.Iterations) * p.IterS
		sa := p.StandaloneS(j.Iterations)
		s.StandaloneS += float64(g) * sa
		s.MaxGPUs = max(s.MaxGPUs, g)
		if g > 1 {
			s.GangJobs++
		}
		standalone = append(standalone, sa)
		persistent = append(persistent, p.PersistentMiB)
		ephemeral = append(ephemeral, p.EphemeralMiB)
		lane = append(lane, (1.1*p.PersistentMiB+p.EphemeralMiB)*1.05)
		s.TotalPersistentMiB += p.PersistentMiB
		models[fmt.Sprintf("%s/%d", p.Model, p.Batch)]++
		lengths[lengthClass(j)]++
		kind := j.Kind
		if kind == "" {
			kind = p.Kind
		}
		kinds[kind]++
	}
	s.SpanS = last - first
	if s.SpanS > 0 {
		s.OfferedLoad, s.StandaloneLoad = s.GPUS/s.SpanS, s.StandaloneS/s.SpanS
	}
	s.Models, s.Lengths, s.Kinds = counts(models), counts(lengths), counts(kinds)
	s.JobStandaloneS, s.PersistentMiB, s.EphemeralMiB, s.LaneMiB = summarize(standalone), summarize(persistent), summarize(ephemeral), summarize(lane)
	return s
}

func lengthClass(j Job) string {
	for _, l := range LengthMix {
		if n, ok := j.Profile.Lengths[l.Class]; ok && n == j.Iterations {
			return l.Class
		}
	}
	return "other"
}

// counts sorts by count, most first, then by value.
func counts(m map[string]int) []Count {
	out := make([]Count, 0, len(m))
	for v, n := range m {
		out = append(out, Count{Value: v, Jobs: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Jobs != out[j].Jobs {
			return out[i].Jobs > out[j].Jobs
		}
		return out[i].Value < out[j].Value
	})
	return out
}

func summarize(xs []float64) Summary {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Summary{Min: s[0], Median: med, Mean: sum / float64(n), Max: s[n-1]}
}

// Write prints the summary for people.
func (s Stats) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "trace\t%s\n", s.Name)
	fmt.Fprintf(tw, "jobs\t%d (%s)\n", s.Jobs, joinCounts(s.Kinds, 0))
	fmt.Fprintf(tw, "arrival span\t%.1f min\n", s.SpanS/60)
	fmt.Fprintf(tw, "GPU time demanded\t%.1f min (%.1f min with start-up)\n", s.GPUS/60, s.StandaloneS/60)
	if s.GangJobs > 0 {
		fmt.Fprintf(tw, "gangs\t%d jobs on more than one GPU, up to %d; their GPU time counts on each GPU\n", s.GangJobs, s.MaxGPUs)
	}
	if s.SpanS > 0 {
		fmt.Fprintf(tw, "offered load\t%.2f (GPU time / span; %.2f with start-up)\n", s.OfferedLoad, s.StandaloneLoad)
	} else {
		fmt.Fprintf(tw, "offered load\t- (every job arrives at once)\n")
	}
	fmt.Fprintf(tw, "job length alone\tmin %.1f, median %.1f, mean %.1f, max %.1f min\n",
		s.JobStandaloneS.Min/60, s.JobStandaloneS.Median/60, s.JobStandaloneS.Mean/60, s.JobStandaloneS.Max/60)
	fmt.Fprintf(tw, "length classes\t%s\n", joinCounts(s.Lengths, 0))
	fmt.Fprintf(tw, "models\t%d distinct; most common: %s\n", len(s.Models), joinCounts(s.Models, 8))
	for _, m := range []struct {
		name string
		s    Summary
	}{{"persistent memory", s.PersistentMiB}, {"ephemeral memory", s.EphemeralMiB}, {"lane alone", s.LaneMiB}} {
		fmt.Fprintf(tw, "%s\tmin %.0f, median %.0f, mean %.0f, max %.0f MiB\n", m.name, m.s.Min, m.s.Median, m.s.Mean, m.s.Max)
	}
	fmt.Fprintf(tw, "all persistent at once\t%.1f GiB\n", s.TotalPersistentMiB/1024)
	return tw.Flush()
}

func joinCounts(cs []Count, limit int) string {
	out := ""
	for i, c := range cs {
		if limit > 0 && i == limit {
			out += fmt.Sprintf(", ... (%d more)", len(cs)-limit)
			break
		}
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s %d", c.Value, c.Jobs)
	}
	return out
}
