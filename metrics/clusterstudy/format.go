package clusterstudy

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// Report is the study of several runs of one trace on one cluster (a policy
// each, and exclusive GPUs).
type Report struct {
	Cluster string   `json:"cluster"`
	Nodes   int      `json:"nodes"`
	GPUs    int      `json:"gpus"`
	Trace   string   `json:"trace"`
	Jobs    int      `json:"jobs"`
	Runs    []Result `json:"runs"`
}

func pct(f float64) string { return fmt.Sprintf("%.1f%%", f*100) }

func secs(d Dist) string {
	if d.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f / %.0f / %.0f", d.Mean, d.Median, d.P95)
}

// Table prints the report for people: the groups' utilization, allocation and
// fragmentation per run, then the queueing per class and the run ratio.
func (r *Report) Table(w io.Writer) error {
	fmt.Fprintf(w, "Cluster %s (%d nodes, %d GPUs), trace %s (%d jobs)\n\n", r.Cluster, r.Nodes, r.GPUs, r.Trace, r.Jobs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "group\tnodes\tGPUs\trun\tutilization\tallocation\tfragmentation")
	row := func(g Group, run string) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\n", g.Name, g.Nodes, g.GPUs, run, pct(g.Utilization), pct(g.Allocation), pct(g.Fragmentation))
	}
	for _, run := range r.Runs {
		row(run.Cluster, run.Run)
	}
	if len(r.Runs) > 0 {
		for i := range r.Runs[0].Shapes {
			for _, run := range r.Runs {
				row(run.Shapes[i], run.Run)
			}
		}
		for i := range r.Runs[0].Models {
			for _, run := range r.Runs {
				row(run.Models[i], run.Run)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nQueueing delay per priority class, seconds (mean / median / p95): simulated, and the trace's own")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tpriority\tjobs\tsimulated\ttrace")
	for _, run := range r.Runs {
		for _, c := range run.Classes {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", run.Run, c.Priority, c.Jobs, secs(c.Sim), secs(c.Trace))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nSimulated JCT over the trace's own run (scheduled to end), per job")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tjobs\tmedian\tp95")
	for _, run := range r.Runs {
		if run.RunRatio.N == 0 {
			fmt.Fprintf(tw, "%s\t0\t-\t-\n", run.Run)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\n", run.Run, run.RunRatio.N, run.RunRatio.Median, run.RunRatio.P95)
	}
	return tw.Flush()
}

// JSON writes the report as one JSON object.
func (r *Report) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// CSV writes the report a row per run and group (section cluster, shape,
// model), per run and class (section class), and per run's run ratio (section
// run_ratio), with the columns that apply filled.
func (r *Report) CSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"run", "section", "name", "nodes", "gpus", "jobs", "utilization", "allocation", "fragmentation",
		"sim_mean", "sim_median", "sim_p95", "trace_mean", "trace_median", "trace_p95"})
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	group := func(run, section string, g Group) {
		cw.Write([]string{run, section, g.Name, strconv.Itoa(g.Nodes), strconv.Itoa(g.GPUs), "", f(g.Utilization), f(g.Allocation), f(g.Fragmentation),
			"", "", "", "", "", ""})
	}
	dist := func(d Dist) []string {
		if d.N == 0 {
			return []string{"", "", ""}
		}
		return []string{f(d.Mean), f(d.Median), f(d.P95)}
	}
	for _, run := range r.Runs {
		group(run.Run, "cluster", run.Cluster)
		for _, g := range run.Shapes {
			group(run.Run, "shape", g)
		}
		for _, g := range run.Models {
			group(run.Run, "model", g)
		}
		for _, c := range run.Classes {
			rec := append([]string{run.Run, "class", strconv.Itoa(c.Priority), "", "", strconv.Itoa(c.Jobs), "", "", ""}, dist(c.Sim)...)
			cw.Write(append(rec, dist(c.Trace)...))
		}
		rec := append([]string{run.Run, "run_ratio", "jct/trace_run", "", "", strconv.Itoa(run.RunRatio.N), "", "", ""}, dist(run.RunRatio)...)
		cw.Write(append(rec, "", "", ""))
	}
	cw.Flush()
	return cw.Error()
}
