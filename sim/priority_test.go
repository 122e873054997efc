package sim

import (
	"fmt"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/workload"
)

// inferenceAmongTraining is a trace of six long training jobs, arriving in the
// first seconds at priority train (the longest iteration: inception3/100's
// 683 ms), and from t=100 s an inference job of 200 requests 50 ms apart at
// priority infer; it returns the trace and the longest training iteration,
// seconds.
func inferenceAmongTraining(t *testing.T, train, infer int) (*workload.Trace, float64) {
	t.Helper()
	cat := workload.Default()
	tr := &workload.Trace{Name: "inference-among-training"}
	longest := 0.0
	for i, m := range []struct {
		model string
		batch int
	}{{"inception3", 100}, {"resnet101", 50}, {"vgg16", 50}, {"googlenet", 100}, {"alexnet", 100}, {"overfeat", 50}} {
		p, err := cat.Lookup(m.model, m.batch, workload.Train)
		if err != nil {
			t.Fatal(err)
		}
		tr.Jobs = append(tr.Jobs, workload.Job{ID: fmt.Sprintf("train%d", i), Model: m.model, Batch: m.batch, Kind: workload.Train,
			Iterations: 2000, ArrivalS: float64(i), Profile: &p, Priority: train})
		longest = max(longest, p.IterS)
	}
	p, err := cat.Lookup("resnet50", 1, workload.Infer)
	if err != nil {
		t.Fatal(err)
	}
	tr.Jobs = append(tr.Jobs, workload.Job{ID: "infer", Model: "resnet50", Batch: 1, Kind: workload.Infer, Iterations: 200,
		ArrivalS: 100, PauseS: 0.05, Profile: &p, Priority: infer})
	return tr, longest
}

// meanWait simulates tr under policy and returns the inference job's mean wait
// from a request to the start of its iteration, seconds.
func meanWait(t *testing.T, tr *workload.Trace, policy string) float64 {
	t.Helper()
	p, err := core.Lookup(policy)
	if err != nil {
		t.Fatal(err)
	}
	var start, sum float64
	n := 0
	sink := sinkFunc(func(e eventlog.Event) {
		if e.Job != "infer" {
			return
		}
		switch e.Kind {
		case eventlog.IterStart:
			start = e.T
		case eventlog.Served:
			// Served's latency runs from the request to the iteration's end.
			sum += e.Latency - (e.T - start)
			n++
		}
	})
	if err := Run(tr, Options{Policy: p, Device: device.DefaultDevice(), Sink: sink}); err != nil {
		t.Fatal(err)
	}
	if n != 200 {
		t.Fatalf("%s: %d requests served, want 200", policy, n)
	}
	return sum / float64(n)
}

// A priority-0 inference job among priority-1 training jobs waits, on average,
// less than two of the longest training iterations before each of its requests
// starts, under every policy that shares one lane (where requests queue behind
// training iterations); with equal priorities it waits longer under request
// order (fcfs), where every queued training iteration goes first.
func TestPriorityInferenceLatency(t *testing.T) {
	urgent, longest := inferenceAmongTraining(t, 1, 0)
	for _, policy := range []string{"fcfs", "srtf", "fair", "pack"} {
		w := meanWait(t, urgent, policy)
		t.Logf("%s: mean wait %.1f ms, longest training iteration %.1f ms", policy, w*1000, longest*1000)
		if w > 2*longest {
			t.Errorf("%s: the priority-0 inference job waits %.1f ms on average, more than 2 x the longest training iteration (%.1f ms)", policy, w*1000, longest*1000)
		}
	}
	equal, _ := inferenceAmongTraining(t, 0, 0)
	wu, we := meanWait(t, urgent, "fcfs"), meanWait(t, equal, "fcfs")
	t.Logf("fcfs: mean wait %.1f ms with priorities, %.1f ms without", wu*1000, we*1000)
	if we <= wu {
		t.Errorf("fcfs: without priorities the inference job waits %.1f ms, no longer than with them (%.1f ms): the check shows nothing", we*1000, wu*1000)
	}
}
