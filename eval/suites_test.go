package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
)

// The paper's two sets: the small superres jobs gain more from sharing than
// resnet50's, whose iterations keep the GPU busy; each set's jobs are as long
// alone as the paper's one-by-one makespan over 300 says.
func TestTuningSmallJobsGainMore(t *testing.T) {
	rep, err := Tuning(TuningOptions{Device: device.DefaultDevice(), Modes: core.DefaultModeParams()})
	if err != nil {
		t.Fatal(err)
	}
	gain := map[string]float64{}
	for _, r := range rep.Runs {
		if r.Improvement < 1 {
			t.Errorf("%s %s: improvement %.2f below 1", r.Workload, r.Scheme, r.Improvement)
		}
		if r.Scheme == "pack" {
			gain[r.Workload] = r.Improvement
		}
		for _, w := range TuningWorkloads {
			if r.Workload == fmt.Sprintf("%s/%d", w.Model, w.Batch) && math.Abs(r.SequentialS/60-w.PaperFIFOMin) > 0.01*w.PaperFIFOMin {
				t.Errorf("%s: one by one %.1f min, the paper's %.1f", r.Workload, r.SequentialS/60, w.PaperFIFOMin)
			}
		}
	}
	if !(gain["superres/128"] > gain["resnet50/50"]) || len(gain) != 2 {
		t.Errorf("pack: superres gains %.2fx, not more than resnet50's %.2fx", gain["superres/128"], gain["resnet50/50"])
	}
	var buf bytes.Buffer
	rep.JSON(&buf)
	var got struct {
		Suite string
		Runs  []map[string]any
	}
	json.Unmarshal(buf.Bytes(), &got)
	if got.Suite != "tuning" || len(got.Runs) != 6 {
		t.Fatalf("json: %s", buf.String())
	}
	for _, k := range []string{"workload", "scheme", "makespan_s", "sequential_makespan_s", "improvement"} {
		if _, ok := got.Runs[0][k]; !ok {
			t.Errorf("tuning run lacks %q", k)
		}
	}
}

func TestSequentialBaselineIsFIFO(t *testing.T) {
	// Running the tuning jobs under exclusive fifo takes exactly the one-by-one time.
	rep, err := Tuning(TuningOptions{Jobs: 5, Iterations: 20, Schemes: []Scheme{{"exclusive", "fifo"}}, Device: device.DefaultDevice()})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Runs {
		if d := r.Makespan - r.SequentialS; d > 1e-6 || d < -1e-6 {
			t.Errorf("%s: fifo makespan %v, one by one %v", r.Workload, r.Makespan, r.SequentialS)
		}
	}
}

func TestInferenceGPUsAndLatency(t *testing.T) {
	rep, err := Inference(InferenceOptions{Requests: 30, Seed: 1, Device: device.DefaultDevice(), Modes: core.DefaultModeParams()})
	if err != nil {
		t.Fatal(err)
	}
	gpus := map[string]int{}
	for _, r := range rep.Runs {
		gpus[r.Scheme] = r.GPUsNeeded
		for _, m := range r.Models {
			if m.Requests != 90 {
				t.Errorf("%s %s: %d requests served, want 90", r.Scheme, m.Model, m.Requests)
			}
			// The clock counts nanoseconds: an iteration is its time rounded to one.
			if m.MeanS < m.AloneS-1e-9 || m.P99S < m.AloneS-1e-9 {
				t.Errorf("%s %s: latency mean %v p99 %v below alone %v", r.Scheme, m.Model, m.MeanS, m.P99S, m.AloneS)
			}
		}
	}
	if gpus["salus"] != 1 || gpus["exclusive"] != 42 || !(gpus["mps"] > 1 && gpus["mps"] < 42) {
		t.Errorf("GPUs needed %v: want salus 1, no sharing 42, mps in between", gpus)
	}
	if len(rep.Papers) != 2 || rep.Papers[0].Measured != 42 {
		t.Errorf("headlines %+v", rep.Papers)
	}
}

func TestResolveSchemes(t *testing.T) {
	mp := core.DefaultModeParams()
	cases := []struct {
		policies, modes []string
		want            string
	}{
		{nil, nil, "fifo srtf pack fair mps timeslice suspend-fair suspend-srtf"},
		{[]string{"fifo", "pack"}, nil, "fifo pack"},
		{nil, []string{"suspend"}, "suspend-fair suspend-srtf"},
		{[]string{"srtf"}, []string{"suspend", "salus"}, "suspend-srtf srtf"},
	}
	for _, c := range cases {
		got, err := ResolveSchemes(c.policies, c.modes, mp)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range got {
			names = append(names, s.String())
		}
		if s := join(names); s != c.want {
			t.Errorf("%v %v: %s, want %s", c.policies, c.modes, s, c.want)
		}
	}
	for _, bad := range [][2][]string{{{"pack"}, {"suspend"}}, {{"srtf"}, {"mps"}}, {nil, {"warp"}}, {{"nope"}, nil}} {
		if _, err := ResolveSchemes(bad[0], bad[1], mp); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func join(xs []string) string {
	var b bytes.Buffer
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(x)
	}
	return b.String()
}

func BenchmarkSuiteAll(b *testing.B) {
	dev, mp := device.DefaultDevice(), core.DefaultModeParams()
	for b.Loop() {
		Training(TrainingOptions{Trace: salus100(b, 1), Device: dev, Modes: mp})
		Tuning(TuningOptions{Device: dev, Modes: mp})
		Inference(InferenceOptions{Device: dev, Modes: mp})
	}
}
