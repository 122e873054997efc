package eval

import (
	"bytes"
	"strings"
	"testing"

	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/workload"
)

// TestClassTableOnlyWithSeveralPriorities: a trace with an urgent inference job
// among training jobs gets the per-priority table, a row per scheme and class,
// each class with its own jobs; the same trace with one priority gets none.
func TestClassTableOnlyWithSeveralPriorities(t *testing.T) {
	tr := boundTrace(3, 12, 2, true, 1)
	for i := range tr.Jobs {
		if tr.Jobs[i].Kind == workload.Infer {
			tr.Jobs[i].Priority = 0
		} else {
			tr.Jobs[i].Priority = 2
		}
	}
	schemes := []Scheme{{"exclusive", "fifo"}, {"salus", "fair"}}
	rep, err := Training(TrainingOptions{Trace: tr, Schemes: schemes, Device: device.DefaultDevice()})
	if err != nil {
		t.Fatal(err)
	}
	infer := 0
	for _, j := range tr.Jobs {
		if j.Kind == workload.Infer {
			infer++
		}
	}
	if infer == 0 || infer == len(tr.Jobs) {
		t.Fatalf("the trace has %d inference jobs of %d: want both kinds", infer, len(tr.Jobs))
	}
	for _, run := range rep.Runs {
		if len(run.Classes) != 2 || run.Classes[0].Priority != 0 || run.Classes[0].Jobs != infer ||
			run.Classes[1].Jobs != len(tr.Jobs)-infer || run.Classes[0].Requests == 0 || run.Classes[1].Requests != 0 {
			t.Errorf("%s: classes %+v: want priority 0 with the %d inference jobs and their requests, then 2", run.Scheme, run.Classes, infer)
		}
	}
	var out bytes.Buffer
	if err := rep.Table(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Per priority class") {
		t.Errorf("no per-priority table:\n%s", out.String())
	}
	if _, rows := rep.ClassRows(); len(rows) != 2*len(schemes) {
		t.Errorf("%d class rows, want 2 per scheme", len(rows))
	}

	for i := range tr.Jobs {
		tr.Jobs[i].Priority = 1
	}
	if rep, err = Training(TrainingOptions{Trace: tr, Schemes: schemes, Device: device.DefaultDevice()}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := rep.Table(&out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "Per priority class") || rep.Runs[0].Classes != nil {
		t.Errorf("one priority: want no per-class figures, got %+v\n%s", rep.Runs[0].Classes, out.String())
	}
}

// TestReportCarriesTheBound: the training report has the trace's bound and every
// run's ratios to it, none below 1.
func TestReportCarriesTheBound(t *testing.T) {
	tr := boundTrace(5, 15, 3, false, 1)
	rep, err := Training(TrainingOptions{Trace: tr, Device: device.DefaultDevice()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Bound == nil || rep.Bound.AvgJCTS <= 0 || rep.Bound.MakespanS <= 0 {
		t.Fatalf("bound %+v: want positive bounds", rep.Bound)
	}
	for _, run := range rep.Runs {
		if run.JCTVsBound < 1-1e-6 || run.MakespanVsBound < 1-1e-6 {
			t.Errorf("%s: %.4fx and %.4fx the bounds: want at least 1", run.Scheme, run.JCTVsBound, run.MakespanVsBound)
		}
	}
	var out bytes.Buffer
	if err := rep.CSV(&out); err != nil {
		t.Fatal(err)
	}
	if head, _, _ := strings.Cut(out.String(), "\n"); !strings.HasSuffix(head, "avg_jct_vs_bound,makespan_vs_bound,bound_avg_jct_s,bound_makespan_s") {
		t.Errorf("CSV header %q: want the bound's columns last", head)
	}
}
