package report

import (
	"strings"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/plots/layoutcheck"
	"github.com/salusgo/salus/workload"
)

// Every figure of a training report and of --suite all's (every suite's
// pictures) is laid out so that it can be read: no text off the figure, on
// another text or over the data, and every chart's axes labelled.
func TestEveryFigureCanBeRead(t *testing.T) {
	_, w := trainingReport(t)
	tr, err := workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Paper, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	dev := device.DefaultDevice()
	all, err := eval.RunAll(eval.Options{Device: dev, Modes: core.DefaultModeParams(), Training: eval.TrainingOptions{Trace: tr},
		Tuning: eval.TuningOptions{Jobs: 50}, Inference: eval.InferenceOptions{Requests: 100}})
	if err != nil {
		t.Fatal(err)
	}
	wa, err := Write(Options{Dir: t.TempDir(), Results: all, Args: []string{"salus", "eval", "--suite", "all"}})
	if err != nil {
		t.Fatal(err)
	}
	figs := append(w.Figures, wa.Figures...)
	if len(figs) < 15 {
		t.Fatalf("only %d figures drawn", len(figs))
	}
	for _, f := range figs {
		problems, texts := layoutcheck.Check(f)
		for _, p := range problems {
			t.Error(p)
		}
		if strings.Contains(f.Name, "timeline") && !layoutcheck.Has(texts, "job") && !layoutcheck.Has(texts, "job (arrival order)") {
			t.Errorf("%s: the job axis is not labelled", f.Name)
		}
	}
}
