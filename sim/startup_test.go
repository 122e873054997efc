package sim

import (
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/workload"
)

// startupRun runs trace under policy with or without the start-up as GPU work.
func startupRun(t *testing.T, trace *workload.Trace, policy string, gpuWork bool) metrics.Result {
	t.Helper()
	p, err := core.Lookup(policy)
	if err != nil {
		t.Fatal(err)
	}
	dev := device.DefaultDevice()
	dev.StartupIsGPUWork = gpuWork
	c := metrics.NewCollector()
	if err := Run(trace, Options{Policy: p, Device: dev, Sink: c}); err != nil {
		t.Fatal(err)
	}
	r, err := c.Result()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Two jobs arrive together in srtf's one lane. With start-up off the GPU, the
// start-ups overlap and the makespan is the longer start-up plus every
// iteration; as GPU work of the first iterations, the lane runs both start-ups
// too, one after the other, so the makespan is everything added up. FIFO, which
// holds the GPU through start-up either way, is the same in both.
func TestStartupAsGPUWork(t *testing.T) {
	p, err := workload.Default().Lookup("resnet50", 50, workload.Train)
	if err != nil {
		t.Fatal(err)
	}
	trace := &workload.Trace{Name: "two", Jobs: []workload.Job{
		{ID: "a", Model: "resnet50", Batch: 50, Kind: workload.Train, Iterations: 10, Profile: &p},
		{ID: "b", Model: "resnet50", Batch: 50, Kind: workload.Train, Iterations: 20, Profile: &p},
	}}
	work := 30 * p.IterS
	off := startupRun(t, trace, "srtf", false)
	on := startupRun(t, trace, "srtf", true)
	if got, want := off.MakespanS, p.StartupS+work; !near(got, want) {
		t.Errorf("start-up off the GPU: makespan %v, want %v", got, want)
	}
	if got, want := on.MakespanS, 2*p.StartupS+work; !near(got, want) {
		t.Errorf("start-up as GPU work: makespan %v, want %v", got, want)
	}
	// The shorter job runs first, its start-up in its first iteration; the other
	// queues behind all of it, start-up included.
	if got, want := on.AvgQueuingS, (p.StartupS+10*p.IterS)/2; !near(got, want) {
		t.Errorf("start-up as GPU work: average queuing %v, want %v", got, want)
	}
	if a, b := startupRun(t, trace, "fifo", false), startupRun(t, trace, "fifo", true); !near(a.MakespanS, b.MakespanS) || !near(a.AvgJCTS, b.AvgJCTS) || !near(a.AvgQueuingS, b.AvgQueuingS) {
		t.Errorf("fifo changed with the start-up as GPU work: %+v against %+v", a, b)
	}
}

func near(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }
