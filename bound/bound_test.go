package bound

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/workload"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestSRPTByHand checks SRPT on cases worked out by hand: a short job that
// arrives during a long one preempts it; a longer one does not.
func TestSRPTByHand(t *testing.T) {
	for _, c := range []struct {
		name  string
		jobs  []Job
		speed float64
		want  []float64
	}{
		{"preempts", []Job{{ReleaseS: 0, WorkS: 10}, {ReleaseS: 2, WorkS: 3}}, 1, []float64{13, 5}},
		{"does not preempt", []Job{{ReleaseS: 0, WorkS: 10}, {ReleaseS: 2, WorkS: 9}}, 1, []float64{10, 19}},
		{"idle gap", []Job{{ReleaseS: 0, WorkS: 1}, {ReleaseS: 5, WorkS: 1}}, 1, []float64{1, 6}},
		{"speed 2", []Job{{ReleaseS: 0, WorkS: 4}, {ReleaseS: 0, WorkS: 2}}, 2, []float64{3, 1}},
		{"no work", []Job{{ReleaseS: 3, WorkS: 0}}, 1, []float64{3}},
		{"unsorted releases", []Job{{ReleaseS: 4, WorkS: 1}, {ReleaseS: 0, WorkS: 6}}, 1, []float64{5, 7}},
	} {
		got := SRPT(c.jobs, c.speed)
		for i := range c.want {
			if !near(got[i], c.want[i]) {
				t.Errorf("%s: completions %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
}

// TestSRPTBeatsEveryPriorityOrder checks, on random small instances, that SRPT's
// sum of completion times is no larger than that of any fixed priority order run
// preemptively (every permutation), the schedules it must beat.
func TestSRPTBeatsEveryPriorityOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	for trial := range 200 {
		n := 1 + rng.IntN(5)
		jobs := make([]Job, n)
		for i := range jobs {
			jobs[i] = Job{ReleaseS: float64(rng.IntN(6)), WorkS: float64(1 + rng.IntN(6))}
		}
		srpt := sum(SRPT(jobs, 1))
		perm := make([]int, n)
		for i := range perm {
			perm[i] = i
		}
		permute(perm, 0, func(p []int) {
			if s := sum(byPriority(jobs, p)); srpt > s+1e-9 {
				t.Fatalf("trial %d: SRPT's sum %v above order %v's %v on %+v", trial, srpt, p, s, jobs)
			}
		})
	}
}

// byPriority runs jobs preemptively on one machine of speed 1, the released job
// earliest in prio first, in steps of one (releases and works are integers).
func byPriority(jobs []Job, prio []int) []float64 {
	left := make([]float64, len(jobs))
	ends := make([]float64, len(jobs))
	for i, j := range jobs {
		left[i] = j.WorkS
	}
	remaining := len(jobs)
	for now := 0.0; remaining > 0; now++ {
		for _, i := range prio {
			if jobs[i].ReleaseS <= now && left[i] > 0 {
				if left[i]--; left[i] == 0 {
					ends[i] = now + 1
					remaining--
				}
				break
			}
		}
	}
	return ends
}

func permute(p []int, k int, visit func([]int)) {
	if k == len(p) {
		visit(p)
		return
	}
	for i := k; i < len(p); i++ {
		p[k], p[i] = p[i], p[k]
		permute(p, k+1, visit)
		p[k], p[i] = p[i], p[k]
	}
}

func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

// TestOneJob: a job alone on the device is its own bound, exactly.
func TestOneJob(t *testing.T) {
	p := workload.Profile{Model: "m", IterS: 0.5, StartupS: 4, PersistentMiB: 1, EphemeralMiB: 1, Demand: 0.5}
	tr := &workload.Trace{Name: "one", Jobs: []workload.Job{{ID: "a", Iterations: 10, ArrivalS: 3, Profile: &p}}}
	b, err := Of(tr, device.DefaultDevice())
	if err != nil {
		t.Fatal(err)
	}
	if !near(b.AvgJCTS, 9) || !near(b.MakespanS, 9) || !near(b.AloneAvgJCTS, 9) {
		t.Errorf("bound %+v: want an average JCT and a makespan of 9 s (4 s start-up + 10 x 0.5 s)", b)
	}
	// Work: 10 x 0.5 s x demand 0.5, released after the start-up: 3 + 4 + 2.5.
	if !near(b.WorkAvgJCTS, 6.5) {
		t.Errorf("work bound %v, want 6.5 s", b.WorkAvgJCTS)
	}
}

// TestWorkBoundBinds: many jobs of full demand arriving at once queue on the
// machine: the work bound is above the alone bound, and matches SRPT by hand.
func TestWorkBoundBinds(t *testing.T) {
	p := workload.Profile{Model: "m", IterS: 1, PersistentMiB: 1, EphemeralMiB: 1, Demand: 1}
	tr := &workload.Trace{Name: "burst"}
	for i, n := range []int{1, 2, 3} {
		tr.Jobs = append(tr.Jobs, workload.Job{ID: string(rune('a' + i)), Iterations: n, Profile: &p})
	}
	dev := device.DefaultDevice()
	b, err := Of(tr, dev)
	if err != nil {
		t.Fatal(err)
	}
	// SRPT: completions 1, 3, 6; alone: 1, 2, 3.
	if !near(b.WorkAvgJCTS, 10.0/3) || !near(b.AloneAvgJCTS, 2) || !near(b.AvgJCTS, 10.0/3) || !near(b.MakespanS, 6) {
		t.Errorf("bound %+v: want average JCT 10/3 s (work) and makespan 6 s", b)
	}
	// Two GPUs halve the machine's time: completions 0.5, 1.5, 3; alone binds.
	dev.GPUs = 2
	if b, err = Of(tr, dev); err != nil {
		t.Fatal(err)
	}
	if !near(b.WorkAvgJCTS, 5.0/3) || !near(b.AvgJCTS, 2) || !near(b.MakespanS, 3) || b.GPUs != 2 {
		t.Errorf("bound on 2 GPUs %+v: want work 5/3 s, average JCT 2 s, makespan 3 s", b)
	}
}

// TestGangAndPauses: a gang job's work counts on each of its GPUs; an inference
// job's pauses count in its time alone.
func TestGangAndPauses(t *testing.T) {
	p := workload.Profile{Model: "m", IterS: 1, PersistentMiB: 1, EphemeralMiB: 1, Demand: 1}
	tr := &workload.Trace{Name: "mix", Jobs: []workload.Job{
		{ID: "gang", Iterations: 4, GPUs: 2, Profile: &p},
		{ID: "infer", Kind: workload.Infer, Iterations: 3, PauseS: 10, Profile: &p},
	}}
	dev := device.DefaultDevice()
	dev.GPUs = 2
	jobs, err := Jobs(tr, dev)
	if err != nil {
		t.Fatal(err)
	}
	if jobs[0].WorkS != 8 || jobs[0].AloneS != 4 || jobs[1].AloneS != 23 || jobs[1].WorkS != 3 {
		t.Errorf("jobs %+v: want the gang's work 8 and alone 4, inference alone 3 + 2 x 10 = 23", jobs)
	}
	dev.GPUs = 1
	if _, err := Of(tr, dev); err == nil {
		t.Error("a gang of 2 on one GPU: want an error")
	}
}

// TestDeviceSpeed: a faster device shortens iterations, not start-up.
func TestDeviceSpeed(t *testing.T) {
	p := workload.Profile{Model: "m", IterS: 2, StartupS: 1, PersistentMiB: 1, EphemeralMiB: 1, Demand: 1}
	tr := &workload.Trace{Name: "s", Jobs: []workload.Job{{ID: "a", Iterations: 3, Profile: &p}}}
	dev := device.DefaultDevice()
	dev.Speed = 2
	b, err := Of(tr, dev)
	if err != nil {
		t.Fatal(err)
	}
	if !near(b.AvgJCTS, 4) {
		t.Errorf("bound %v at speed 2, want 1 + 3 x 1 = 4 s", b.AvgJCTS)
	}
}

func TestErrors(t *testing.T) {
	if _, err := Of(&workload.Trace{Name: "empty"}, device.DefaultDevice()); err == nil {
		t.Error("an empty trace: want an error")
	}
	if _, err := Compute([]Job{{WorkS: 1}}, 0); err == nil {
		t.Error("no GPUs: want an error")
	}
}

// TestAlone: the bound of times alone only, as an event log allows.
func TestAlone(t *testing.T) {
	b, err := Alone([]float64{10, 0}, []float64{5, 3})
	if err != nil {
		t.Fatal(err)
	}
	if !near(b.AvgJCTS, 4) || !near(b.MakespanS, 15) || !b.AloneOnly || b.WorkAvgJCTS != 0 {
		t.Errorf("bound %+v: want average 4 s, makespan 15 s (10 + 5 - 0), alone only", b)
	}
	if _, err := Alone([]float64{1}, nil); err == nil {
		t.Error("mismatched lists: want an error")
	}
}
