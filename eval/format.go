package eval

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// Table prints the report for people: minutes, and ratios to fifo.
func (r *Report) Table(w io.Writer) error {
	fmt.Fprintf(w, "Suite %s on %s: trace %s (%d jobs, seed %d), device %s (%.0f MiB usable)\n\n",
		r.Suite, r.Engine, r.Trace.Name, r.Trace.Jobs, r.Trace.Seed, r.Device.Name, r.Device.CapacityMiB)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tmode\tmakespan (min)\tavg queuing (min)\tavg JCT (min)\tp95 JCT (min)\tGPU busy\tavg JCT vs fifo\tmakespan vs fifo\t")
	for _, run := range r.Runs {
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f%%\t%s\t%s\t\n", run.Policy, run.Mode,
			run.MakespanS/60, run.AvgQueuingS/60, run.AvgJCTS/60, run.P95JCTS/60, run.GPUBusy*100,
			ratio(run.JCTSpeedup), ratio(run.MakespanSpeedup))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Paper.Measured > 0 {
		fmt.Fprintf(w, "\nPaper: %s %.2fx. Measured here: %.2fx (the paper's trace and arrival process were never published; see README).\n",
			r.Paper.Claim, r.Paper.Value, r.Paper.Measured)
	}
	return nil
}

func ratio(x float64) string {
	if x == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", x)
}

// JSON prints the report as one indented JSON object.
func (r *Report) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// CSV prints one line per run.
func (r *Report) CSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"suite", "engine", "trace", "seed", "policy", "mode", "jobs", "makespan_s", "avg_jct_s", "p95_jct_s",
		"avg_queuing_s", "gpu_busy", "avg_jct_speedup_vs_fifo", "makespan_speedup_vs_fifo"})
	for _, run := range r.Runs {
		cw.Write([]string{r.Suite, r.Engine, r.Trace.Name, strconv.FormatInt(r.Trace.Seed, 10), run.Policy, run.Mode,
			strconv.Itoa(run.Jobs), num(run.MakespanS), num(run.AvgJCTS), num(run.P95JCTS), num(run.AvgQueuingS),
			num(run.GPUBusy), num(run.JCTSpeedup), num(run.MakespanSpeedup)})
	}
	cw.Flush()
	return cw.Error()
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', 6, 64) }
