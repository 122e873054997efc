package eval

import (
	"reflect"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/workload"
)

// TestZeroModeParamsAreTheDefaults runs the training suite, every scheme, on the
// generated paper trace with the mode parameters left out and with the documented
// defaults: the zero value of the options is the defaults, so the reports must be
// the same, to the last figure.
func TestZeroModeParamsAreTheDefaults(t *testing.T) {
	tr, err := workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Paper, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	zero, err := Training(TrainingOptions{Trace: tr, Device: device.DefaultDevice()})
	if err != nil {
		t.Fatal(err)
	}
	def, err := Training(TrainingOptions{Trace: tr, Device: device.DefaultDevice(), Modes: core.DefaultModeParams()})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(zero.Modes, def.Modes) {
		t.Errorf("report's mode parameters: zero value %+v, defaults %+v", zero.Modes, def.Modes)
	}
	if len(zero.Runs) != len(def.Runs) {
		t.Fatalf("%d runs vs %d", len(zero.Runs), len(def.Runs))
	}
	for i := range zero.Runs {
		z, d := zero.Runs[i], def.Runs[i]
		if !reflect.DeepEqual(z.Result, d.Result) {
			t.Errorf("%s: with core.ModeParams{} avg JCT %.1f min, makespan %.1f min; with the defaults %.1f min, %.1f min",
				z.Scheme, z.AvgJCTS/60, z.MakespanS/60, d.AvgJCTS/60, d.MakespanS/60)
		}
	}
}
