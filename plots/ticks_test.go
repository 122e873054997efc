package plots

import (
	"testing"
)

// A log axis within one decade still gets labels (plot.LogTicks would label
// none), and a timeline of a few jobs names each row after its job.
func TestTicksLabelWhatAPersonReads(t *testing.T) {
	labelled := 0
	for _, tk := range (logTicks{}).Ticks(15, 80) {
		if tk.Label != "" {
			labelled++
		}
	}
	if labelled < 3 {
		t.Errorf("15 to 80 on a log axis: %d labelled ticks, want at least 3", labelled)
	}
	l := &RunLog{Jobs: []*JobTrace{{ID: "train-a"}, {ID: "train-b"}, {ID: "infer-c"}}}
	ts := jobTicks{log: l}.Ticks(-3, 1)
	if len(ts) != 3 || ts[0].Label != "train-a" || ts[2].Label != "infer-c" {
		t.Errorf("timeline rows of three jobs: %+v, want their names", ts)
	}
	for i := 0; i < 60; i++ {
		l.Jobs = append(l.Jobs, &JobTrace{ID: "j"})
	}
	if ts := (jobTicks{log: l}).Ticks(-63, 1); len(ts) > 10 || ts[0].Label != "1" {
		t.Errorf("timeline rows of 63 jobs: %d ticks from %q, want every tenth index", len(ts), ts[0].Label)
	}
}
