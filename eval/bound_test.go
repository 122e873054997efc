package eval

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/salusgo/salus/bound"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/workload"
)

// registeredSchemes is every registered mode with every registered policy it
// runs, from the registries: a scheme registered later is checked too.
func registeredSchemes() []Scheme {
	var out []Scheme
	for _, m := range core.ModeNames() {
		for _, p := range core.Accepts(m) {
			out = append(out, Scheme{Mode: m, Policy: p})
		}
	}
	return out
}

// boundTrace is a random trace: training jobs of the catalog, and when infer is
// set inference jobs with pauses between requests; gangs of up to maxGang GPUs;
// arrivals a Poisson process whose mean gap is gap seconds.
func boundTrace(seed uint64, jobs int, gap float64, infer bool, maxGang int) *workload.Trace {
	rng := rand.New(rand.NewPCG(seed, 15))
	cat := workload.Default()
	var train, inf []workload.Profile
	for _, p := range cat.Profiles() {
		if p.Kind == workload.Infer {
			inf = append(inf, p)
		} else {
			train = append(train, p)
		}
	}
	t := &workload.Trace{Name: fmt.Sprintf("bound-%d", seed), Seed: int64(seed)}
	now := 0.0
	for i := range jobs {
		now += rng.ExpFloat64() * gap
		j := workload.Job{ID: fmt.Sprintf("j%02d", i), ArrivalS: now}
		if infer && len(inf) > 0 && rng.IntN(3) == 0 {
			j.Profile = &inf[rng.IntN(len(inf))]
			j.Kind, j.Iterations, j.PauseS = workload.Infer, 1+rng.IntN(20), rng.Float64()*0.5
		} else {
			j.Profile = &train[rng.IntN(len(train))]
			j.Iterations = 1 + rng.IntN(60)
			if maxGang > 1 && rng.IntN(4) == 0 {
				j.GPUs = 2 + rng.IntN(maxGang-1)
			}
		}
		j.Model, j.Batch = j.Profile.Model, j.Profile.Batch
		if j.Kind == "" {
			j.Kind = j.Profile.Kind
		}
		t.Jobs = append(t.Jobs, j)
	}
	return t
}

// TestNoSchemeBeatsTheBound runs every registered scheme on random traces (seeds,
// loads, one GPU and several with gangs and every GPU placement, inference jobs,
// overheads) and checks
// that none has an average JCT or a makespan below the trace's lower bound.
func TestNoSchemeBeatsTheBound(t *testing.T) {
	// A float tolerance: the simulator rounds each phase to the nanosecond.
	const tol = 1e-6
	schemes := registeredSchemes()
	if len(schemes) < 8 {
		t.Fatalf("only %d schemes registered: the registry walk is broken", len(schemes))
	}
	ran := 0
	minJCT, minMakespan := 1e9, 1e9
	for seed := uint64(1); seed <= 6; seed++ {
		for _, c := range []struct {
			gap   float64
			gpus  int
			infer bool
		}{{20, 1, false}, {2, 1, true}, {0.5, 1, true}, {3, 2, true}, {1, 4, false}} {
			tr := boundTrace(seed, 20, c.gap, c.infer, c.gpus)
			dev := device.DefaultDevice()
			dev.GPUs = c.gpus
			// Each GPU placement in turn, over the seeds.
			placements := core.GPUPlacementNames()
			dev.GPUPlacement = placements[int(seed)%len(placements)]
			dev.IterOverheadS = float64(seed%2) * 0.001
			dev.SwitchS = float64(seed%3) * 0.002
			b, err := bound.Of(tr, dev)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range schemes {
				run, err := Simulate(tr, s, core.DefaultModeParams(), dev, "")
				if err != nil {
					t.Fatalf("%s on %s (%d GPUs): %v", s, tr.Name, c.gpus, err)
				}
				ran++
				minJCT, minMakespan = min(minJCT, run.AvgJCTS/b.AvgJCTS), min(minMakespan, run.MakespanS/b.MakespanS)
				if run.AvgJCTS < b.AvgJCTS*(1-tol) {
					t.Errorf("%s on %s, gap %g s, %d GPUs: average JCT %.6f s below the bound %.6f s (%+v)",
						s, tr.Name, c.gap, c.gpus, run.AvgJCTS, b.AvgJCTS, b)
				}
				if run.MakespanS < b.MakespanS*(1-tol) {
					t.Errorf("%s on %s, gap %g s, %d GPUs: makespan %.6f s below the bound %.6f s (%+v)",
						s, tr.Name, c.gap, c.gpus, run.MakespanS, b.MakespanS, b)
				}
			}
		}
	}
	t.Logf("%d runs of %d schemes checked; the closest to the bound: average JCT %.6fx, makespan %.6fx", ran, len(schemes), minJCT, minMakespan)
}
