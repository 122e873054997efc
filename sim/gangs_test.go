package sim

import (
	"testing"

	"github.com/salusgo/salus/interference"
	"github.com/salusgo/salus/sim/simtest"
)

// Gangs out of step (gangs.go): a gang whose ranks share their GPUs with other
// jobs, under the co-location model and under today's rule, takes stretches
// whose every job's result is the per-iteration engine's, under every
// registered scheme on two and three GPUs; and the stretches do take such a
// gang's iterations (where none were, each of its ranks' ends stopped every
// stretch).
func TestGangsOutOfStepAreExact(t *testing.T) {
	models := map[string]*interference.Model{"rule": nil, "model": interference.Builtin()}
	for name, m := range models {
		took := 0
		for _, ms := range simtest.Schemes() {
			for seed := uint64(1); seed <= 6; seed++ {
				gpus := 2 + int(seed%2)
				ff, err := agreeGangs(t, ms, seed, 24, gpus, 0, 3, m)
				if err != nil {
					t.Fatalf("%s/%s seed %d on %d GPUs, gangs every 3rd job (%s): with stretches, %v", ms[0], ms[1], seed, gpus, name, err)
				}
				took += ff.gangIterations
			}
		}
		if took == 0 {
			t.Errorf("%s: no stretch took a gang out of step", name)
		}
		t.Logf("%s: stretches took %d iterations of gangs out of step", name, took)
	}
}
