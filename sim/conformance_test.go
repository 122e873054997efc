package sim_test

import (
	"fmt"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/sim/conformance"
)

// The conformance checks (package sim/conformance): every registered mode with
// every registered policy it runs, taken from the registries, goes through the
// same named checks. A new policy or mode is checked by registering it;
// TestConformanceOfANewPolicyAndMode shows how, without touching another file.

func TestConformance(t *testing.T) {
	seeds := uint64(30)
	if testing.Short() {
		seeds = 10
	}
	schemes := conformance.Schemes(seeds)
	if len(schemes) < len(core.ModeNames()) {
		t.Fatalf("only %d schemes from %d modes: a mode runs no policy", len(schemes), len(core.ModeNames()))
	}
	for _, c := range schemes {
		t.Run(c.Name(), func(t *testing.T) { conformance.Run(t, c) })
	}
	// The same with admission in the policy's order, at the default bound and at
	// a tight one.
	for _, k := range []float64{0, 0.25} {
		mp := core.DefaultModeParams()
		mp.Admission, mp.StarveFactor = core.AdmitByPolicy, k
		for _, c := range conformance.Schemes(seeds / 2) {
			c.Params = &mp
			t.Run(fmt.Sprintf("%s/admission=policy,K=%g", c.Name(), k), func(t *testing.T) { conformance.Run(t, c) })
		}
	}
}

// Every check says what it pins, under a name of its own.
func TestConformanceChecksAreNamed(t *testing.T) {
	seen := map[string]bool{}
	for _, ch := range conformance.Checks {
		if ch.Name == "" || ch.Pins == "" || ch.Check == nil || seen[ch.Name] {
			t.Errorf("check %q: want a unique name, what it pins and its function", ch.Name)
		}
		seen[ch.Name] = true
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
	for _, c := range conformance.Schemes(10) {
		if c.Mode != "ungated" && c.Policy != "newest-first" {
			continue
		}
		ran[c.Name()] = true
		t.Run(c.Name(), func(t *testing.T) { conformance.Run(t, c) })
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
