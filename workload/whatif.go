package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// ScaleLoad makes the trace's jobs arrive x times as fast: every arrival time is
// divided by x (load 2: arrivals twice as fast, twice the offered load; load 0.5:
// half). The jobs themselves are unchanged. The trace's Load records the factor
// (multiplied into any earlier one) and its name gains "-loadX". x must be a
// positive, finite number; 1 changes nothing.
func (t *Trace) ScaleLoad(x float64) error {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return fmt.Errorf("load %v: give a positive factor (2 makes the jobs arrive twice as fast, 0.5 half as fast)", x)
	}
	if x == 1 {
		return nil
	}
	for i := range t.Jobs {
		t.Jobs[i].ArrivalS /= x
	}
	t.Load = t.LoadFactor() * x
	t.Name += "-load" + strconv.FormatFloat(x, 'g', 4, 64)
	return nil
}

// LoadFactor is the factor the trace's arrivals were scaled by (1 when they were not).
func (t *Trace) LoadFactor() float64 {
	if t.Load == 0 {
		return 1
	}
	return t.Load
}

// The ways of resampling one trace into several, for confidence intervals when
// there is only one trace (see Resample).
const (
	ResampleNone      = "none"
	ResampleBootstrap = "bootstrap"
	ResampleJitter    = "jitter"
)

// ResampleMethods lists the resampling methods.
var ResampleMethods = []string{ResampleBootstrap, ResampleJitter, ResampleNone}

// Resample returns a new trace drawn from t by method, seeded by seed (the same
// seed gives the same trace); t is left as it is.
//
//   - bootstrap: as many jobs as t has, drawn uniformly with replacement from its
//     jobs. Each drawn job keeps its own arrival time, so the drawn trace stays in
//     arrival order (jobs drawn more than once arrive together); a job drawn k > 1
//     times appears as ID, ID#2, ..., ID#k, so that every id is unique. The offered
//     load is the original's in expectation.
//   - jitter: the same jobs in the same order, each gap between consecutive
//     arrivals multiplied by a factor drawn uniformly from [0.5, 1.5): the mix
//     stays and only the timing changes, by chance.
//   - none: a copy of t.
func (t *Trace) Resample(method string, seed int64) (*Trace, error) {
	out := &Trace{Name: t.Name, Seed: seed, Load: t.Load}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x7e5a))
	switch method {
	case ResampleNone, "":
		out.Jobs = slices.Clone(t.Jobs)
		out.Seed, out.ResampledBy = t.Seed, t.ResampledBy
		return out, nil
	case ResampleBootstrap:
		out.ResampledBy = method
		out.Name += fmt.Sprintf("-bootstrap%d", seed)
		picks := make([]int, len(t.Jobs))
		for i := range picks {
			picks[i] = rng.IntN(len(t.Jobs))
		}
		slices.Sort(picks) // keeps arrival order: t's jobs are sorted by arrival
		taken := map[string]bool{}
		for _, j := range t.Jobs {
			taken[j.ID] = true
		}
		copies := map[int]int{}
		for _, p := range picks {
			j := t.Jobs[p]
			if copies[p]++; copies[p] > 1 {
				j.ID = freshID(j.ID, copies[p], taken)
			}
			out.Jobs = append(out.Jobs, j)
		}
		return out, nil
	case ResampleJitter:
		out.ResampledBy = method
		out.Name += fmt.Sprintf("-jitter%d", seed)
		out.Jobs = slices.Clone(t.Jobs)
		now := 0.0
		for i := range out.Jobs {
			if i == 0 {
				now = t.Jobs[0].ArrivalS
			} else {
				now += (t.Jobs[i].ArrivalS - t.Jobs[i-1].ArrivalS) * (0.5 + rng.Float64())
			}
			out.Jobs[i].ArrivalS = now
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown resampling method %q: choose %s", method, strings.Join(ResampleMethods, ", "))
}

// freshID names the k-th copy of id: id#k, or id#k.2, id#k.3, ... if the trace
// already has a job of that name.
func freshID(id string, k int, taken map[string]bool) string {
	name := fmt.Sprintf("%s#%d", id, k)
	for n := 2; taken[name]; n++ {
		name = fmt.Sprintf("%s#%d.%d", id, k, n)
	}
	taken[name] = true
	return name
}
