package eval

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/workload"
)

// Predicted is what the simulator gives for the jobs of a live run, beside the
// live run's figures: how far the daemon was from the model.
type Predicted struct {
	Scheme       string  `json:"scheme"`
	SimMakespanS float64 `json:"sim_makespan_s"`
	SimAvgJCTS   float64 `json:"sim_avg_jct_s"`
	SimP95JCTS   float64 `json:"sim_p95_jct_s"`
	// The live run's figure over the simulator's, less one (0.05: live 5% longer).
	LiveVsSimMakespan float64 `json:"live_vs_sim_makespan"`
	LiveVsSimAvgJCT   float64 `json:"live_vs_sim_avg_jct"`
	LiveVsSimP95JCT   float64 `json:"live_vs_sim_p95_jct"`
	// CompletionOrder says whether the jobs finished in the same order ("same"),
	// or how many did not.
	CompletionOrder string `json:"completion_order"`
}

// Predict compares a live run with the simulator's run of the same jobs t.
func Predict(t *workload.Trace, live, sim Run) Predicted {
	return Predicted{Scheme: live.Scheme, SimMakespanS: sim.MakespanS, SimAvgJCTS: sim.AvgJCTS, SimP95JCTS: sim.P95JCTS,
		LiveVsSimMakespan: off(live.MakespanS, sim.MakespanS), LiveVsSimAvgJCT: off(live.AvgJCTS, sim.AvgJCTS),
		LiveVsSimP95JCT: off(live.P95JCTS, sim.P95JCTS), CompletionOrder: SameOrder(t, live.Completion, sim.Completion)}
}

func off(live, sim float64) float64 {
	if sim == 0 {
		return 0
	}
	return live/sim - 1
}

// Percent shows live/sim - 1 as a signed percentage ("-" when there is no
// simulated figure).
func Percent(live, sim float64) string {
	if sim == 0 {
		return "-"
	}
	d := 100 * (live/sim - 1)
	if math.Abs(d) < 0.05 {
		d = 0 // no "-0.0%"
	}
	return fmt.Sprintf("%+.1f%%", d)
}

// SameOrder says whether the jobs completed in the same order, or how many did
// not. Jobs that nothing tells apart (same arrival, model and iterations) count
// as the same job: a daemon at --server, or one a team's clients reach, takes
// simultaneous arrivals in whatever order they come.
func SameOrder(t *workload.Trace, live, sim []metrics.JobResult) string {
	if len(live) != len(sim) {
		return fmt.Sprintf("%d vs %d jobs", len(live), len(sim))
	}
	kind := map[string]string{}
	for _, j := range t.Jobs {
		kind[j.ID] = fmt.Sprintf("%g/%s/%d", j.ArrivalS, j.Profile.Key(), j.Iterations)
	}
	differ := 0
	for i := range live {
		if kind[live[i].ID] != kind[sim[i].ID] {
			differ++
		}
	}
	if differ == 0 {
		return "same"
	}
	return fmt.Sprintf("%d of %d differ", differ, len(live))
}

// predictedTable prints the simulator's figures beside the live runs', in unit u.
func (r *Report) predictedTable(w io.Writer, u TimeUnit) error {
	if len(r.Predicted) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%s\n\n", Wrap("The simulator on the same jobs (salus trace from-log: each job with the iteration time, start-up and memory its log measured), and the live run's difference from it:", 100))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "scheme\tsim makespan (%[1]s)\tlive vs sim\tsim avg JCT (%[1]s)\tlive vs sim\tsim p95 JCT (%[1]s)\tlive vs sim\tcompletion order\t\n", u.Name)
	for _, p := range r.Predicted {
		pct := func(x float64) string { return Percent(1+x, 1) }
		fmt.Fprintf(tw, "%s\t%.2f\t%s\t%.2f\t%s\t%.2f\t%s\t%s\t\n", p.Scheme, p.SimMakespanS*u.Scale, pct(p.LiveVsSimMakespan),
			p.SimAvgJCTS*u.Scale, pct(p.LiveVsSimAvgJCT), p.SimP95JCTS*u.Scale, pct(p.LiveVsSimP95JCT), p.CompletionOrder)
	}
	return tw.Flush()
}
