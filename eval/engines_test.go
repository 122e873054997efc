package eval

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/salusgo/salus/cluster"
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

// countingEngine is the simulator, counting the runs it is asked for.
type countingEngine struct {
	sim.Engine
	runs *atomic.Int32
}

func (e countingEngine) Run(ctx context.Context, r engine.Run) (engine.Outcome, error) {
	e.runs.Add(1)
	return e.Engine.Run(ctx, r)
}

// A gang job wider than every node fails the suite once, before any run, with
// one message naming the job, not once a scheme with the same message.
func TestAJobTooWideFailsOnceBeforeRunning(t *testing.T) {
	p100 := func(gpus int) device.Device {
		d := device.DefaultDevice()
		d.GPUs = gpus
		return d
	}
	tr := salus100(t, 1)
	tr.Jobs = tr.Jobs[:5]
	tr.Jobs[3].GPUs = 16
	for _, c := range []struct {
		name    string
		cluster Cluster
		want    string
	}{
		{"one node", Cluster{}, "the node has 8"},
		{"a cluster", Cluster{Nodes: cluster.New("c.yaml", []cluster.Node{{Name: "a", Model: "p100", Device: p100(4)}, {Name: "b", Model: "p100", Device: p100(8)}})},
			"the largest node of the cluster has 8"},
	} {
		var runs atomic.Int32
		dev := device.DefaultDevice()
		dev.GPUs = 8
		rep, err := Training(TrainingOptions{Trace: tr, Device: dev, Engine: countingEngine{runs: &runs}, Cluster: c.cluster})
		var failed *RunsFailed
		switch {
		case err == nil:
			t.Errorf("%s: a 16-GPU job on 8-GPU nodes ran", c.name)
		case errors.As(err, &failed):
			t.Errorf("%s: %d runs failed, want one error before any: %v", c.name, failed.Failed, err)
		case rep != nil || runs.Load() != 0:
			t.Errorf("%s: %d runs, a report %v: want none", c.name, runs.Load(), rep != nil)
		case !strings.Contains(err.Error(), `job "`+tr.Jobs[3].ID+`" needs 16 GPUs`) || !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: %v, want the job named and %q", c.name, err, c.want)
		}
	}
}
