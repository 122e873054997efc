package core_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/salusgo/salus/core"
)

// TestRegistries checks every registered policy and mode against the other
// registry: each policy runs in its own mode, and each mode runs its defaults.
func TestRegistries(t *testing.T) {
	mp := core.DefaultModeParams()
	for _, name := range core.Names() {
		p, err := core.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if p.Name != name || p.Placement == nil || p.Order == nil {
			t.Errorf("policy %s: name %q, placement %v, order set %v", name, p.Name, p.Placement, p.Order != nil)
		}
		if _, err := core.LookupMode(p.Mode); err != nil {
			t.Errorf("policy %s runs in an unregistered mode: %v", name, err)
		}
		if !slices.Contains(core.Accepts(p.Mode), name) {
			t.Errorf("policy %s: its own mode %s does not accept it", name, p.Mode)
		}
	}
	for _, name := range core.ModeNames() {
		m, err := core.LookupMode(name)
		if err != nil {
			t.Fatal(err)
		}
		if m.Description == "" || len(m.DefaultPolicies) == 0 {
			t.Errorf("mode %s: no description or no default policies", name)
		}
		for _, pol := range m.DefaultPolicies {
			p, err := core.Compose(name, pol, mp)
			if err != nil {
				t.Errorf("mode %s cannot run its default %s: %v", name, pol, err)
				continue
			}
			if p.Mode != name || p.Name != pol || m.SchemeLabel(pol) == "" {
				t.Errorf("mode %s with %s composed %s/%s", name, pol, p.Mode, p.Name)
			}
		}
	}
	if _, err := core.Compose("lottery", "fifo", mp); err == nil {
		t.Error("an unknown mode composed")
	}
	if _, err := core.Compose(core.ModeSalus, "lottery", mp); err == nil {
		t.Error("an unknown policy composed")
	}
}

func TestRegisteringTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("registering fifo twice did not panic")
		}
	}()
	core.RegisterPolicy(core.FIFO)
}

// A policy is a constructor and one RegisterPolicy call (or a line in the
// registry's map); the modes that accept it run it at once.
func ExampleRegisterPolicy() {
	core.RegisterPolicy(func() core.Policy {
		return core.Policy{
			Name:        "newest-first",
			Description: "one lane; latest arrival first",
			Mode:        core.ModeSalus, // its own mode, where Lookup runs it
			Placement:   core.OneLane{},
			Order:       core.OrderFunc(func(a, b core.JobView) bool { return a.Seq > b.Seq }),
		}
	})
	defer core.UnregisterPolicy("newest-first")
	p, _ := core.Lookup("newest-first")
	fmt.Println(p.Name, p.Mode, p.Gated)
	for _, m := range core.ModeNames() {
		if slices.Contains(core.Accepts(m), "newest-first") {
			fmt.Println("runs in", m)
		}
	}
	// Output:
	// newest-first salus true
	// runs in salus
	// runs in suspend
}

// TestZeroModeParamsComposeAsTheDefaults checks that every registered mode
// composes the same policy from core.ModeParams{} as from core.DefaultModeParams, and
// that a negative parameter means none.
func TestZeroModeParamsComposeAsTheDefaults(t *testing.T) {
	for _, mode := range core.ModeNames() {
		m, _ := core.LookupMode(mode)
		for _, name := range m.DefaultPolicies {
			z, err := core.Compose(mode, name, core.ModeParams{})
			if err != nil {
				t.Fatal(err)
			}
			d, err := core.Compose(mode, name, core.DefaultModeParams())
			if err != nil {
				t.Fatal(err)
			}
			if z.Quantum != d.Quantum || z.Sharing != d.Sharing || z.Description != d.Description ||
				fmt.Sprintf("%#v", z.Placement) != fmt.Sprintf("%#v", d.Placement) {
				t.Errorf("%s-%s: zero value %#v (quantum %v), defaults %#v (quantum %v)", mode, name, z.Placement, z.Quantum, d.Placement, d.Quantum)
			}
		}
	}
	p, err := core.Compose(core.ModeSuspend, "fair", core.ModeParams{SuspendQuantumS: -1})
	if err != nil || p.Quantum != 0 {
		t.Errorf("suspend quantum -1: %v, %v; want none", p.Quantum, err)
	}
	p, err = core.Compose(core.ModeTimeslice, "fifo", core.ModeParams{ContextMiB: -1})
	if err != nil || p.Placement.(core.PerProcess).ContextMiB != 0 {
		t.Errorf("context -1: %#v, %v; want none", p.Placement, err)
	}
}
