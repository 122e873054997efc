package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/sim/simtest"
	"github.com/salusgo/salus/workload"
)

// traceJob builds a trace job with a profile of its own: iterations of iterS seconds,
// a start-up of startupS, persistent and ephemeral memory in MiB.
func traceJob(id string, arrivalS float64, iterations int, iterS, startupS, persistent, ephemeral float64) workload.Job {
	return workload.Job{ID: id, Model: "m-" + id, Batch: 1, Kind: workload.Train, Iterations: iterations, ArrivalS: arrivalS,
		Profile: &workload.Profile{Model: "m-" + id, Batch: 1, Kind: workload.Train, IterS: iterS, StartupS: startupS,
			PersistentMiB: persistent, EphemeralMiB: ephemeral, PeakMiB: persistent + ephemeral, Demand: 0.5}}
}

// starts runs the trace under policy on a device of capacity MiB and returns the
// iteration starts in log order, as "job@seconds".
func starts(t *testing.T, policy string, capacity float64, jobs ...workload.Job) []string {
	t.Helper()
	p, err := core.Lookup(policy)
	if err != nil {
		t.Fatal(err)
	}
	dev := device.DefaultDevice()
	dev.CapacityMiB = capacity
	var out []string
	err = Run(&workload.Trace{Name: "rule", Jobs: jobs}, Options{Policy: p, Device: dev, PerIteration: true, Sink: sinkFunc(func(e eventlog.Event) {
		if e.Kind == eventlog.IterStart {
			out = append(out, fmt.Sprintf("%s@%g", e.Job, e.T))
		}
	})})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Rule 1: a job admitted because another left, whose start-up is already over,
// competes at that same boundary.
func TestRule1AdmittedJobCompetesAtTheBoundary(t *testing.T) {
	got := starts(t, "srtf", 1000,
		traceJob("a", 0, 100, 1, 0, 400, 100), // 100 s of GPU time
		traceJob("x", 0, 1, 1, 0, 400, 100),   // 1 s: runs first, leaves at t=1
		traceJob("c", 0, 5, 1, 0.5, 400, 100), // 5 s: no memory until x leaves; started up at 0.5
	)
	if got[0] != "x@0" || got[1] != "c@1" {
		t.Errorf("starts %v: want x at 0, then c (5 s left, admitted at 1) before a (100 s left)", got[:3])
	}
}

// Rule 2: jobs that become ready on an idle lane at the same instant: the policy
// chooses, whatever order they asked in.
func TestRule2SimultaneousReadyJobsFollowThePolicy(t *testing.T) {
	for _, policy := range []string{"srtf", "fair"} {
		got := starts(t, policy, 14000,
			traceJob("long", 0, 10, 1, 2, 100, 100),
			traceJob("short", 0, 3, 1, 2, 100, 100),
		)
		want := "short@2" // srtf: less left
		if policy == "fair" {
			want = "long@2" // a tie (nothing attained) goes to the earlier arrival
		}
		if got[0] != want {
			t.Errorf("%s: first start %s, want %s", policy, got[0], want)
		}
	}
}

// Rule 3: a start-up that ends exactly at an iteration boundary competes at it.
func TestRule3StartupEndingAtABoundaryCompetes(t *testing.T) {
	for _, policy := range []string{"srtf", "fair"} {
		got := starts(t, policy, 14000,
			traceJob("long", 0, 50, 2, 0, 100, 100), // iterations end at 2, 4, ...
			traceJob("short", 0, 3, 1, 2, 100, 100), // start-up ends at 2
		)
		if got[0] != "long@0" || got[1] != "short@2" {
			t.Errorf("%s: starts %v, want long at 0, then short at 2", policy, got[:2])
		}
	}
}

// orderChecker checks, at every iteration start of a one-lane policy, that no other
// job ready at that instant comes first in the policy's order: less remaining
// declared time (srtf) or less attained time (fair). It reads only the log.
type orderChecker struct {
	t                  *testing.T
	name, policy       string
	ready              map[string]time.Duration // admitted, not running: when its start-up ends
	declared, attained map[string]time.Duration
	admitted, running  map[string]bool
	starts             int
}

func ns(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

func (c *orderChecker) Emit(e eventlog.Event) {
	now := ns(e.T)
	switch e.Kind {
	case eventlog.Arrive:
		c.ready[e.Job] = now + ns(e.StartupS)
		c.declared[e.Job] = ns(e.DeclaredS)
	case eventlog.Admit:
		c.admitted[e.Job] = true
	case eventlog.IterEnd:
		c.running[e.Job] = false
		c.attained[e.Job] += ns(e.GPU)
	case eventlog.Finish:
		delete(c.ready, e.Job)
	case eventlog.IterStart:
		c.starts++
		c.running[e.Job] = true
		key := func(id string) time.Duration {
			if c.policy == "srtf" {
				return c.declared[id] - c.attained[id]
			}
			return c.attained[id]
		}
		for other, readyAt := range c.ready {
			if other == e.Job || !c.admitted[other] || c.running[other] || readyAt > now {
				continue
			}
			if key(other) < key(e.Job) {
				c.t.Fatalf("%s: at %v %s starts (key %v) while %s waits ready with key %v", c.name, now, e.Job, key(e.Job), other, key(other))
			}
		}
	}
}

// A property of srtf and fair over random traces where many things happen at once:
// arrivals, start-ups and iterations on a coarse grid, so that jobs often become
// ready at the same instant as iterations end and memory frees.
func TestPolicyOrderHoldsAtEveryBoundary(t *testing.T) {
	profiles := workload.Default().Profiles()
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 9))
		var jobs []workload.Job
		arrival := 0.0
		for i := range 20 {
			if rng.IntN(3) == 0 {
				arrival += float64(rng.IntN(4))
			}
			p := profiles[rng.IntN(len(profiles))]
			j := traceJob(fmt.Sprintf("j%02d", i), arrival, 1+rng.IntN(8), 0.5*float64(1+rng.IntN(4)), 0.5*float64(rng.IntN(5)),
				p.PersistentMiB, p.EphemeralMiB)
			jobs = append(jobs, j)
		}
		for _, policy := range []string{"srtf", "fair"} {
			p, _ := core.Lookup(policy)
			c := &orderChecker{t: t, name: fmt.Sprintf("seed %d %s", seed, policy), policy: policy, ready: map[string]time.Duration{},
				declared: map[string]time.Duration{}, attained: map[string]time.Duration{}, admitted: map[string]bool{}, running: map[string]bool{}}
			if err := Run(&workload.Trace{Name: "grid", Jobs: jobs}, Options{Policy: p, Device: device.DefaultDevice(), PerIteration: true, Sink: c}); err != nil {
				t.Fatal(err)
			}
			if c.starts == 0 {
				t.Fatalf("%s: no iteration started", c.name)
			}
		}
	}
}

// The clock is integer nanoseconds: runs whose clock passes 2^24 s (194 days, where
// a float64 clock can no longer add a nanosecond) finish, with exact end times.
func TestClockPastTwoToTheTwentyFour(t *testing.T) {
	year := 365 * 24 * 3600.0
	trace := &workload.Trace{Name: "years", Jobs: []workload.Job{
		traceJob("a", 0, 3, 0.25, 1, 100, 100),
		traceJob("b", year, 3, 0.25, 1, 100, 100),
		traceJob("c", 2*year, 3, 0.25, 1, 100, 100),
		traceJob("long", 2*year+10, 20000, 1000, 1, 100, 100), // 2e7 s of iterations
	}}
	want := map[string]time.Duration{
		"a": ns(1 + 0.75), "b": ns(year + 1 + 0.75), "c": ns(2*year + 1 + 0.75), "long": ns(2*year + 10 + 1 + 2e7),
	}
	for _, ms := range simtest.Schemes() {
		p, err := core.Compose(ms[0], ms[1], core.DefaultModeParams())
		if err != nil {
			t.Fatal(err)
		}
		ends := map[string]time.Duration{}
		err = Run(trace, Options{Policy: p, Device: device.DefaultDevice(), Sink: sinkFunc(func(e eventlog.Event) {
			if e.Kind == eventlog.Finish {
				ends[e.Job] = ns(e.T)
			}
		})})
		if err != nil {
			t.Fatalf("%v: %v", ms, err)
		}
		for id, w := range want {
			if got := ends[id]; got != w && !(p.Swapped && got > w) {
				t.Errorf("%v: %s ends at %v, want %v", ms, id, got, w)
			}
		}
	}
}
