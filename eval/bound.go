package eval

import (
	"fmt"
	"io"

	"github.com/salusgo/salus/bound"
	"github.com/salusgo/salus/workload"
)

// SetBound computes the lower bounds of trace t on the report's device (package
// bound) and each run's ratio to them. A run that failed or lost jobs gets no
// ratio: its average covers only the jobs that finished. When no bound can be
// computed (a job needs more GPUs than the device has: every run fails too), the
// report has none and SetBound says why.
func (r *Report) SetBound(t *workload.Trace) error {
	b, err := bound.Of(t, r.Device)
	if err != nil {
		r.Bound = nil
		return err
	}
	r.Bound = &b
	for i := range r.Runs {
		run := &r.Runs[i]
		if run.Error != "" || run.Lost > 0 {
			continue
		}
		run.JCTVsBound = bound.Ratio(run.AvgJCTS, b.AvgJCTS)
		run.MakespanVsBound = bound.Ratio(run.MakespanS, b.MakespanS)
	}
	return nil
}

// SetAloneBound sets the bounds the runs' own jobs give by their times alone
// (bound.Alone), for a report read from an event log, which gives no demands: when
// the report has one run, it finished every job, and each job's time alone is known.
func (r *Report) SetAloneBound() {
	if len(r.Runs) != 1 {
		return
	}
	run := &r.Runs[0]
	if run.Error != "" || run.Lost > 0 || run.SlowdownUnknown > 0 || len(run.Completion) == 0 {
		return
	}
	var arrivals, alone []float64
	for _, j := range run.Completion {
		arrivals, alone = append(arrivals, j.ArrivalS), append(alone, j.AloneS)
	}
	b, err := bound.Alone(arrivals, alone)
	if err != nil {
		return
	}
	r.Bound = &b
	run.JCTVsBound = bound.Ratio(run.AvgJCTS, b.AvgJCTS)
	run.MakespanVsBound = bound.Ratio(run.MakespanS, b.MakespanS)
}

// boundLine prints the report's bounds under its table, when it has them.
func (r *Report) boundLine(w io.Writer) {
	b := r.Bound
	if b == nil {
		return
	}
	u := r.Unit()
	if b.AloneOnly {
		fmt.Fprintf(w, "\n%s\n", Wrap(fmt.Sprintf("Lower bound from the jobs' times alone in the log: average JCT %.1f %s, makespan %.1f %s (the log gives no GPU demands, so the bound on the GPU work is left out; see docs/concepts.md, Lower bound).",
			b.AvgJCTS*u.Scale, u.Name, b.MakespanS*u.Scale, u.Name), 100))
		return
	}
	fmt.Fprintf(w, "\n%s\n", Wrap(fmt.Sprintf("Lower bound on this trace and device, which no scheme can beat: average JCT %.1f %s (the larger of SRPT on the GPU work, %.1f, and the jobs alone, %.1f), makespan %.1f %s. \"/bound\" is each scheme's figure over it (see docs/concepts.md, Lower bound).",
		b.AvgJCTS*u.Scale, u.Name, b.WorkAvgJCTS*u.Scale, b.AloneAvgJCTS*u.Scale, b.MakespanS*u.Scale, u.Name), 100))
}
