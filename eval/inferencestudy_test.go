package eval

import (
	"strings"
	"testing"
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/workload"
)

// The answer is the fewest GPUs that meet the SLO: the p99 there is within it,
// one GPU fewer hosts not every job or misses it, and a looser SLO needs no
// more GPUs than a tighter one.
func TestInferenceStudyFindsTheFewestGPUs(t *testing.T) {
	dev := device.DefaultDevice()
	o := InferenceOptions{Jobs: 28, RequestRate: 10, Requests: 60, Seed: 3, Device: dev, Modes: core.DefaultModeParams()}
	var prev *InferenceStudyReport
	for _, slo := range []time.Duration{45 * time.Millisecond, 60 * time.Millisecond, time.Second} {
		o.SLOP99 = slo
		rep, err := InferenceStudy(o)
		if err != nil {
			t.Fatal(err)
		}
		tr, _, err := studyTrace(o)
		if err != nil {
			t.Fatal(err)
		}
		for i, run := range rep.Runs {
			if run.Scheme == core.ModeExclusive && run.GPUsToHost != rep.Jobs {
				t.Errorf("exclusive hosts %d jobs on %d GPUs: want one GPU a job", rep.Jobs, run.GPUsToHost)
			}
			if !run.MetSLO {
				if run.Tried != rep.Jobs {
					t.Errorf("%s at %v: SLO not met after %d GPUs: want every count up to %d tried", run.Scheme, slo, run.Tried, rep.Jobs)
				}
				continue
			}
			if run.P99S > slo.Seconds() || run.GPUsNeeded < run.GPUsToHost || run.Requests != 28*60 {
				t.Errorf("%s at %v: %+v: want a p99 within the SLO, at least the GPUs to host, every request", run.Scheme, slo, run)
			}
			if g := run.GPUsNeeded - 1; g >= run.GPUsToHost {
				p, _ := core.Compose(run.Scheme, run.Policy, o.Modes)
				lat, hosted, err := inferenceOn(tr, p, dev, g)
				if err != nil {
					t.Fatal(err)
				}
				if hosted && len(lat) > 0 && lat[len(lat)*99/100] <= slo.Seconds() {
					t.Errorf("%s at %v: %d GPUs needed, but %d meet it", run.Scheme, slo, run.GPUsNeeded, g)
				}
			}
			if prev != nil && prev.Runs[i].MetSLO && run.GPUsNeeded > prev.Runs[i].GPUsNeeded {
				t.Errorf("%s: %d GPUs at %v but %d at the tighter %gs", run.Scheme, run.GPUsNeeded, slo, prev.Runs[i].GPUsNeeded, prev.SLOP99S)
			}
		}
		prev = rep
	}
	// Salus needs fewer GPUs than one a job for a loose SLO.
	if r := prev.Runs; !r[2].MetSLO || r[2].GPUsNeeded >= r[0].GPUsNeeded {
		t.Errorf("at 1 s: salus %d GPUs, exclusive %d: want fewer for salus", r[2].GPUsNeeded, r[0].GPUsNeeded)
	}
}

// An SLO under the slowest request alone is met by no scheme, and the table says why.
func TestInferenceStudyUnreachableSLO(t *testing.T) {
	rep, err := InferenceStudy(InferenceOptions{Jobs: 14, RequestRate: 50, Requests: 20, SLOP99: time.Millisecond, Device: device.DefaultDevice()})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range rep.Runs {
		if run.MetSLO || run.GPUsNeeded != 0 || run.Tried != 14 {
			t.Errorf("%+v: want the SLO not met after 14 GPUs", run)
		}
	}
	var b strings.Builder
	if err := rep.Table(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "No scheme can meet it: a request of "+rep.SlowestModel) {
		t.Errorf("table:\n%s\nwant the slowest model named", b.String())
	}
}

// A trace's inference jobs are the study's; a trace of none is refused, naming it.
func TestInferenceStudyTrace(t *testing.T) {
	p, err := workload.Default().Lookup("resnet50", 1, workload.Infer)
	if err != nil {
		t.Fatal(err)
	}
	q, err := workload.Default().Lookup("resnet50", 50, workload.Train)
	if err != nil {
		t.Fatal(err)
	}
	tr := &workload.Trace{Name: "mine", Jobs: []workload.Job{
		{ID: "a", Model: "resnet50", Batch: 1, Kind: workload.Infer, Iterations: 50, PauseS: 0.02, Profile: &p},
		{ID: "b", Model: "resnet50", Batch: 1, Kind: workload.Infer, Iterations: 50, PauseS: 0.02, Profile: &p},
		{ID: "t", Model: "resnet50", Batch: 50, Kind: workload.Train, Iterations: 5, Profile: &q},
	}}
	rep, err := InferenceStudy(InferenceOptions{Trace: tr, SLOP99: time.Second, Device: device.DefaultDevice()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Jobs != 2 || rep.Requests != 100 || !strings.Contains(rep.Source, "1 training jobs left out") {
		t.Errorf("jobs %d, requests %d, source %q: want the 2 inference jobs' 100 requests, the training job left out", rep.Jobs, rep.Requests, rep.Source)
	}
	tr.Jobs = tr.Jobs[2:]
	if _, err := InferenceStudy(InferenceOptions{Trace: tr, SLOP99: time.Second, Device: device.DefaultDevice()}); err == nil || !strings.Contains(err.Error(), "trace mine: none of its 1 jobs") {
		t.Errorf("err %v: want the trace named and its jobs counted", err)
	}
}

// The tuning suite on the user's configurations: each scheme's makespan against
// the jobs' times alone back to back.
func TestTuningTrace(t *testing.T) {
	dev := device.DefaultDevice()
	var jobs []workload.Job
	seq := 0.0
	for i, mb := range []struct {
		m string
		b int
	}{{"superres", 128}, {"superres", 64}, {"resnet50", 50}} {
		p, err := workload.Default().Lookup(mb.m, mb.b, workload.Train)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, workload.Job{ID: mb.m + string(rune('a'+i)), Model: mb.m, Batch: mb.b, Kind: workload.Train, Iterations: 100 * (i + 1), Profile: &p})
		seq += dev.StandaloneS(p, 100*(i+1))
	}
	rep, err := Tuning(TuningOptions{Trace: &workload.Trace{Name: "configs", Jobs: jobs}, Device: dev})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != len(TuningSchemes) || rep.Trace != "configs" || len(rep.Headlines()) != 0 {
		t.Fatalf("%+v: want a run per scheme of the trace, no paper headline", rep)
	}
	for _, r := range rep.Runs {
		if r.Jobs != 3 || r.Iterations != 600 || r.SequentialS != seq || r.Improvement != seq/r.Makespan || r.Makespan <= 0 {
			t.Errorf("%+v: want 3 jobs, 600 iterations, one by one %.1f s and the improvement its ratio to the makespan", r, seq)
		}
	}
}
