package sim

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/workload"
)

// The conformance checks: every registered mode with every registered policy it
// runs, taken from the registries, goes through the same invariants. A new policy
// or mode is checked by registering it; TestConformanceOfANewPolicyAndMode shows
// how, without touching another file.

// registeredSchemes is every registered mode with every registered policy it
// accepts, in the registries' orders.
func registeredSchemes() [][2]string {
	var out [][2]string
	for _, m := range core.ModeNames() {
		for _, p := range core.Accepts(m) {
			out = append(out, [2]string{m, p})
		}
	}
	return out
}

// conform runs policy within mode through every conformance check, on random
// traces of seeds 1 to seeds.
func conform(t *testing.T, mode, policy string, seeds uint64) {
	t.Helper()
	conformWith(t, mode, policy, seeds, core.DefaultModeParams())
	if own, err := core.Lookup(policy); err == nil && own.Mode == mode {
		checkAlone(t, own)
	}
}

// conformWith is conform's invariants with the modes' parameters mp.
func conformWith(t *testing.T, mode, policy string, seeds uint64, mp core.ModeParams) {
	t.Helper()
	p, err := core.Compose(mode, policy, mp)
	if err != nil {
		t.Fatal(err)
	}
	name := mode + "/" + policy
	for seed := uint64(1); seed <= seeds; seed++ {
		checkInvariants(t, name, p, seed)
	}
	checkDeterministic(t, name, p)
}

// checkInvariants simulates a random trace and checks, as the log is written, that
// time never goes back, lanes never allocate more than a GPU holds, a lane runs one
// iteration at a time and an exclusive placement admits one job at a time on a GPU; then
// that every job finished and received its iterations' GPU time, no more, no less.
func checkInvariants(t *testing.T, name string, p core.Policy, seed uint64) {
	t.Helper()
	trace := randomTrace(seed, 25)
	dev := device.DefaultDevice()
	dev.SwitchS = float64(seed%3) * 0.001
	dev.IterOverheadS = float64(seed%2) * 0.0005
	_, exclusive := p.Placement.(core.Exclusive)
	c := newChecker(t, dev.CapacityMiB, exclusive)
	// Under policy-ordered admission, no job is passed over after it has waited
	// its bound (admission.go).
	var sink eventlog.Sink = c
	var po *PassOvers
	if p.Admission.ByPolicy {
		po = NewPassOvers()
		sink = eventlog.Sinks{c, po}
	}
	// Even seeds run a node of 3 GPUs, with every fifth job a gang of 2.
	gpus := 1
	if seed%2 == 0 {
		gpus = 3
		for i := range trace.Jobs {
			if i%5 == 2 {
				trace.Jobs[i].GPUs = 2
			}
		}
	}
	if err := Run(trace, Options{Policy: p, Device: dev, GPUs: gpus, Sink: sink}); err != nil {
		t.Fatalf("seed %d %s: %v", seed, name, err)
	}
	if po != nil && po.MaxPassedOver >= p.Admission.StarveFactor*(1+1e-9) {
		t.Fatalf("seed %d %s: a job was passed over after waiting %gx its length, beyond the bound %g (%s)",
			seed, name, po.MaxPassedOver, p.Admission.StarveFactor, po.Worst)
	}
	for _, j := range trace.Jobs {
		if !c.finished[j.ID] {
			t.Fatalf("seed %d %s: job %s never finished", seed, name, j.ID)
		}
		want := float64(j.Iterations) * j.Profile.IterS
		if math.Abs(c.gpu[j.ID]-want) > 1e-6*want {
			t.Fatalf("seed %d %s: job %s attained %v, want %v", seed, name, j.ID, c.gpu[j.ID], want)
		}
	}
}

// checkDeterministic runs one trace twice and wants the same event log.
func checkDeterministic(t *testing.T, name string, p core.Policy) {
	t.Helper()
	logOf := func() []byte {
		var buf bytes.Buffer
		w := eventlog.NewWriter(&buf)
		if err := Run(randomTrace(3, 25), Options{Policy: p, Device: device.DefaultDevice(), Sink: w}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w.Flush()
		return buf.Bytes()
	}
	if !bytes.Equal(logOf(), logOf()) {
		t.Fatalf("%s: the same trace gave different event logs", name)
	}
}

// checkAlone wants a job alone, under a policy in its own mode, to end at its
// arrival plus its standalone time (start-up and iterations).
func checkAlone(t *testing.T, pol core.Policy) {
	t.Helper()
	p, _ := workload.Default().Lookup("resnet50", 50, workload.Train)
	trace := &workload.Trace{Name: "alone", Jobs: []workload.Job{{ID: "a", Model: "resnet50", Batch: 50, Iterations: 100, ArrivalS: 3, Profile: p}}}
	var end float64
	sink := sinkFunc(func(e eventlog.Event) {
		if e.Kind == eventlog.Finish {
			end = e.T
		}
	})
	if err := Run(trace, Options{Policy: pol, Device: device.DefaultDevice(), Sink: sink}); err != nil {
		t.Fatal(err)
	}
	if want := 3 + p.StandaloneS(100); math.Abs(end-want) > 1e-6 {
		t.Errorf("%s: a job alone ends at %v, want %v (arrival + start-up + 100 iterations)", pol.Name, end, want)
	}
}

func TestConformance(t *testing.T) {
	seeds := uint64(30)
	if testing.Short() {
		seeds = 10
	}
	schemes := registeredSchemes()
	if len(schemes) < len(core.ModeNames()) {
		t.Fatalf("only %d schemes from %d modes: a mode runs no policy", len(schemes), len(core.ModeNames()))
	}
	for _, s := range schemes {
		t.Run(s[0]+"/"+s[1], func(t *testing.T) { conform(t, s[0], s[1], seeds) })
	}
	// The same with admission in the policy's order, at the default bound and at
	// a tight one.
	for _, k := range []float64{0, 0.25} {
		mp := core.DefaultModeParams()
		mp.Admission, mp.StarveFactor = core.AdmitByPolicy, k
		for _, s := range schemes {
			t.Run(fmt.Sprintf("%s/%s/admission=policy,K=%g", s[0], s[1], k), func(t *testing.T) { conformWith(t, s[0], s[1], seeds/2, mp) })
		}
	}
}

// newestFirst is a throwaway policy: one lane, the latest arrival first.
func newestFirst() core.Policy {
	return core.Policy{
		Name:        "newest-first",
		Description: "one lane; latest arrival first",
		Mode:        core.ModeSalus,
		Placement:   core.OneLane{},
		Order:       core.OrderFunc(func(a, b core.JobView) bool { return a.Seq > b.Seq }),
	}
}

// ungatedMode is a throwaway mode: Salus lanes without the per-iteration grant.
func ungatedMode() core.Mode {
	return core.Mode{
		Name:        "ungated",
		Description: "Salus lanes without the per-iteration grant",
		Accepts: func(base core.Policy) error {
			if base.Mode != core.ModeSalus {
				return fmt.Errorf("mode ungated runs lanes: %s shares nothing", base.Name)
			}
			return nil
		},
		DefaultPolicies: []string{"pack"},
	}
}

// TestConformanceOfANewPolicyAndMode registers a policy and a mode here, in the
// test, and runs them through every conformance check: nothing else need change.
func TestConformanceOfANewPolicyAndMode(t *testing.T) {
	core.RegisterPolicy(newestFirst)
	core.RegisterMode(ungatedMode())
	t.Cleanup(func() {
		core.UnregisterPolicy("newest-first")
		core.UnregisterMode("ungated")
	})
	ran := map[string]bool{}
	for _, s := range registeredSchemes() {
		if s[0] != "ungated" && s[1] != "newest-first" {
			continue
		}
		ran[s[0]+"/"+s[1]] = true
		t.Run(s[0]+"/"+s[1], func(t *testing.T) { conform(t, s[0], s[1], 10) })
	}
	for _, want := range []string{"salus/newest-first", "suspend/newest-first", "ungated/newest-first", "ungated/pack"} {
		if !ran[want] {
			t.Errorf("%s did not run: the registries do not offer it", want)
		}
	}
	if _, err := core.Compose(core.ModeExclusive, "newest-first", core.DefaultModeParams()); err == nil {
		t.Error("exclusive accepted newest-first, which shares the GPU")
	}
}
