package eval

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// ClassCaption describes ClassRows's table.
const ClassCaption = "per priority class (a smaller priority is more urgent; waits: from an iteration's request to its start)"

// ClassRows is the per-priority table of the runs that had more than one priority
// class: each class's completion times, the waits of its iterations and its
// inference requests' latencies (what the urgent class gets), and its throughput
// (what the others keep). No rows when no run had several classes.
func (r *Report) ClassRows() (head []string, rows [][]string) {
	head = []string{"scheme", "priority", "jobs", "avg JCT (min)", "p95 JCT (min)", "mean wait (ms)", "p95 wait (ms)",
		"requests", "mean latency (ms)", "p95 latency (ms)", "jobs/h", "iterations/s"}
	f := func(x float64) string { return fmt.Sprintf("%.1f", x) }
	for _, run := range r.Runs {
		if len(run.Classes) < 2 {
			continue
		}
		for _, c := range run.Classes {
			lat, p95 := "-", "-"
			if c.Requests > 0 {
				lat, p95 = f(c.LatencyMeanS*1e3), f(c.LatencyP95S*1e3)
			}
			rows = append(rows, []string{run.Scheme, fmt.Sprint(c.Priority), fmt.Sprint(c.Jobs), f(c.AvgJCTS / 60), f(c.P95JCTS / 60),
				f(c.WaitMeanS * 1e3), f(c.WaitP95S * 1e3), fmt.Sprint(c.Requests), lat, p95,
				fmt.Sprintf("%.2f", c.JobsPerHour), fmt.Sprintf("%.2f", c.IterationsPerS)})
		}
	}
	return head, rows
}

// classTable prints ClassRows under the report's table, when it has rows.
func (r *Report) classTable(w io.Writer) error {
	head, rows := r.ClassRows()
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%s%s:\n", strings.ToUpper(ClassCaption[:1]), ClassCaption[1:])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, row := range rows {
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	return tw.Flush()
}
