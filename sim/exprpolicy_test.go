package sim

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/exprpolicy"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/sim/simtest"
)

// The example policy files (examples/policies: policies written as CEL
// expressions) are registered for every test of the package, as --policy-file
// registers them: the conformance checks and the engines' agreement
// (TestFastForwardIsExact, TestStretchesAreExactUnderTheModel...) take them
// from the registry and run them as they run the built-in policies.
var examplePolicies = func() []string {
	paths, err := filepath.Glob("../examples/policies/*.yaml")
	if err != nil || len(paths) == 0 {
		panic("no example policies in ../examples/policies")
	}
	var names []string
	for _, path := range paths {
		p, err := exprpolicy.Register(path)
		if err != nil {
			panic(err)
		}
		names = append(names, p.Name)
	}
	return names
}()

func TestExamplePoliciesAreRegistered(t *testing.T) {
	for _, want := range []string{"las2d", "memtime"} {
		if !slices.Contains(examplePolicies, want) || !slices.Contains(simtest.Schemes(), [2]string{core.ModeSalus, want}) {
			t.Errorf("%s: not among the schemes the tests take (%v)", want, examplePolicies)
		}
	}
}

// resultOf runs a random trace of seed under the registered policy in its own
// mode, on gpus GPUs, iteration by iteration or with the stretches.
func resultOf(t *testing.T, policy string, seed uint64, jobs, gpus int, noFF bool) metrics.Result {
	t.Helper()
	p, err := core.Lookup(policy)
	if err != nil {
		t.Fatal(err)
	}
	c := metrics.NewCollector()
	dev := device.DefaultDevice()
	if err := run(simtest.RandomTrace(seed, jobs), Options{Policy: p, Device: dev, GPUs: gpus,
		Sink: eventlog.Sinks{c, simtest.NewChecker(t, dev.CapacityMiB, false)}}, noFF, nil); err != nil {
		t.Fatal(err)
	}
	res, err := c.Result()
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The example las2d, with the built-in las's thresholds, is las: a lane's jobs
// each use one GPU (a gang has a closed lane of its own), so GPUs x time
// orders as time does, and the expression's keys give every job the built-in
// policy's result, on one GPU and on several, with gangs.
func TestLas2dFromAFileIsLas(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		gpus := 1 + int(seed%3)
		if err := sameResults(resultOf(t, "las", seed, 30, gpus, false), resultOf(t, "las2d", seed, 30, gpus, false)); err != nil {
			t.Fatalf("seed %d on %d GPUs: las2d against las: %v", seed, gpus, err)
		}
	}
}

// An order that reads nothing that changes as a job runs keeps a running
// job's lead (core.LeadKeeper), so the stretches take its boundaries at once;
// they give every job the result of the per-iteration engine. (memtime, whose
// key falls as a job runs, keeps it too: the tests that take every scheme
// check it.)
func TestAStaticOrderFromAFileStretchesExactly(t *testing.T) {
	p, err := exprpolicy.Parse("least-memory.yaml", []byte("name: least-memory\norder: memory\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.KeepsLead() {
		t.Fatal("an order by memory alone does not keep the lead")
	}
	core.RegisterPolicy(p.Core)
	t.Cleanup(func() { core.UnregisterPolicy("least-memory") })
	forwarded := 0
	for _, ms := range simtest.Schemes() {
		if ms[1] != "least-memory" {
			continue
		}
		for seed := uint64(1); seed <= 6; seed++ {
			gpus := 1 + int(seed%2)
			ff, err := agree(t, ms, seed, 20, gpus, 0, nil)
			if err != nil {
				t.Fatalf("%s/%s seed %d on %d GPUs: with stretches, %v", ms[0], ms[1], seed, gpus, err)
			}
			forwarded += ff.iterations
		}
	}
	if forwarded == 0 {
		t.Fatal("no stretch ever ran")
	}
}
