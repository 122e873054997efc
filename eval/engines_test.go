package eval

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/engine"
	"github.com/salusgo/salus/sim"
)

// The engines register themselves, the simulator first (the reference), and
// every suite runs on each engine or refuses it by its own declaration.
func TestEveryEngineEverySuite(t *testing.T) {
	if names := engine.Names(); !slices.Equal(names, []string{"sim", "live"}) {
		t.Fatalf("engines %v: want sim, then live", names)
	}
	if _, err := engine.Lookup("gpu"); err == nil || !strings.Contains(err.Error(), "sim or live") {
		t.Errorf("Lookup(gpu): %v", err)
	}
	for _, e := range engine.All() {
		for _, name := range Names() {
			s, err := Lookup(name)
			if err != nil {
				continue // all
			}
			err = CheckEngine(s, e)
			_, declares := s.(RunsOn)
			switch {
			case err == nil && !declares && e.Name() != engine.Reference().Name():
				t.Errorf("suite %s runs on %s without saying so", name, e.Name())
			case err != nil && !strings.Contains(err.Error(), e.Name()):
				t.Errorf("suite %s refuses %s without naming it: %v", name, e.Name(), err)
			}
			t.Logf("suite %s on %s: %v", name, e.Name(), err)
		}
	}
}

// A suite given an engine runs on it: the simulator through the interface gives
// what the simulator run directly gives.
func TestTrainingOnAnEngine(t *testing.T) {
	tr := salus100(t, 1)
	direct, err := Training(TrainingOptions{Trace: tr, Device: device.DefaultDevice()})
	if err != nil {
		t.Fatal(err)
	}
	via, err := RunSuite(DefaultSuite, Options{Context: context.Background(), Engine: sim.Engine{}, Device: device.DefaultDevice(),
		Training: TrainingOptions{Trace: tr}})
	if err != nil {
		t.Fatal(err)
	}
	rep := via.(*Report)
	if rep.Engine != "sim" || len(rep.Runs) != len(direct.Runs) {
		t.Fatalf("engine %q, %d runs; want sim, %d", rep.Engine, len(rep.Runs), len(direct.Runs))
	}
	for i := range rep.Runs {
		if !reflect.DeepEqual(rep.Runs[i].Result, direct.Runs[i].Result) {
			t.Errorf("%s differs through the engine interface", rep.Runs[i].Scheme)
		}
	}
	// The live engine's defaults are the schemes it can carry out.
	live, _ := engine.Lookup("live")
	var got []string
	for _, s := range SchemesFor(live, TrainingSchemes) {
		got = append(got, s.String())
	}
	if want := []string{"fifo", "srtf", "pack", "fair"}; !slices.Equal(got, want) {
		t.Errorf("the live engine's default schemes %v, want %v", got, want)
	}
	p, _ := core.Compose(core.ModeMPS, "fifo", core.ModeParams{})
	if err := engine.Check(live, p); err == nil || !strings.Contains(err.Error(), "exclusive, salus") {
		t.Errorf("live runs mps: %v", err)
	}
}
