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
//
// A gang's rank also goes beside lanes that take turns, which a sideBySide
// runs, on the rates the run keeps for it (its own clock's under the model,
// the GPU's one clock's under the rule); every third seed cuts those rates
// short (maxSegs), so that the run stops where they fill.
func TestGangsOutOfStepAreExact(t *testing.T) {
	models := map[string]*interference.Model{"rule": nil, "model": interference.Builtin()}
	for name, m := range models {
		var took forwarded
		for _, ms := range simtest.Schemes() {
			for seed := uint64(1); seed <= 6; seed++ {
				gpus, segs := 2+int(seed%2), 0
				if seed%3 == 0 {
					segs = 2
				}
				ff, err := agreeGangs(t, ms, seed, 40, gpus, segs, 3, m)
				if err != nil {
					t.Fatalf("%s/%s seed %d on %d GPUs, gangs every 3rd job (%s): with stretches, %v", ms[0], ms[1], seed, gpus, name, err)
				}
				took.gangIterations += ff.gangIterations
				took.gangBeside += ff.gangBeside
			}
		}
		if took.gangIterations == 0 || took.gangBeside == 0 {
			t.Errorf("%s: stretches took %d iterations of gangs out of step, %d beside a sideBySide: want some", name, took.gangIterations, took.gangBeside)
		}
		t.Logf("%s: stretches took %d iterations of gangs out of step, %d beside a sideBySide", name, took.gangIterations, took.gangBeside)
	}
	// Found by go test -fuzz FuzzEnginesAgree: a gang beside a run whose rank's
	// rates changed, the stretch taking none of its parts' ends, kept its
	// clock at the rate it had.
	for _, c := range []struct {
		policy      string
		seed        uint64
		gpus, gangs int
	}{{"pack-merge", 69, 2, 4}} {
		if _, err := agreeGangs(t, [2]string{"salus", c.policy}, c.seed, 12, c.gpus, 0, c.gangs, interference.Builtin()); err != nil {
			t.Errorf("salus/%s seed %d on %d GPUs, gangs every %d (model): %v", c.policy, c.seed, c.gpus, c.gangs, err)
		}
	}
}
