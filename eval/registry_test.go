package eval

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
)

type failingSuite struct{}

func (failingSuite) Name() string                { return "failing-test" }
func (failingSuite) Description() string         { return "fails" }
func (failingSuite) AllOrder() int               { return 0 } // first
func (failingSuite) Run(Options) (Result, error) { return nil, errors.New("boom") }

// The registry lists every suite, the ones of --suite all first in their order, and
// --suite all keeps going past a failed suite, which becomes a section.
func TestRegistryAndAllKeepsGoing(t *testing.T) {
	names := Names()
	for _, n := range []string{"training", "tuning", "inference", "overhead", AllName} {
		if !slices.Contains(names, n) {
			t.Errorf("Names() = %v lacks %s", names, n)
		}
	}
	if _, err := Lookup("nope"); err == nil || !strings.Contains(err.Error(), strings.Join(names, ", ")) {
		t.Errorf("Lookup(nope): %v", err)
	}
	Register(failingSuite{})
	t.Cleanup(func() { Unregister("failing-test") })
	if Names()[0] != "failing-test" {
		t.Errorf("Names() = %v: want the failing suite first (AllOrder 0)", Names())
	}
	o := Options{Device: device.DefaultDevice(), Modes: core.DefaultModeParams(), Training: TrainingOptions{Trace: salus100(t, 1)},
		Tuning: TuningOptions{Jobs: 5, Iterations: 20}, Inference: InferenceOptions{Requests: 5}}
	res, err := RunSuite(AllName, o)
	var failed *SuitesFailed
	if !errors.As(err, &failed) || len(failed.Failed) != 1 || failed.Failed[0] != "failing-test" {
		t.Fatalf("err %v, want a *SuitesFailed naming failing-test", err)
	}
	all := res.(*AllReport)
	var got []string
	for _, r := range all.Runs {
		got = append(got, r.SuiteName())
	}
	if strings.Join(got, ",") != "failing-test,training,tuning,inference,paper" {
		t.Errorf("sections %v", got)
	}
	if f, ok := all.Runs[0].(*FailedSuite); !ok || f.Error != "boom" {
		t.Errorf("first section %#v, want the failure", all.Runs[0])
	}
	// training 1, tuning 2 (one per set), inference 2, paper 5 (three Table 1
	// ratios, two tuning sets).
	if len(all.Headlines()) != 10 {
		t.Errorf("headlines %+v", all.Headlines())
	}
	var b strings.Builder
	if err := all.Table(&b); err != nil || !strings.Contains(b.String(), "Suite failing-test failed: boom") {
		t.Errorf("table: %v\n%s", err, b.String())
	}
}
