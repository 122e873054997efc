package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/interference"
	"github.com/salusgo/salus/sim/simtest"
	"github.com/salusgo/salus/workload"
)

// Lanes side by side whose demands pass 1 together, each taking turns among
// jobs of different demands: every turn that changes the job of a lane
// changes the GPU's share, so a stretch runs the GPU's clock boundary by
// boundary (sideBySide). Under every registered scheme, every job's arrival,
// first service, end and GPU time are the per-iteration engine's, on one GPU
// and on two; and pack takes nearly all its iterations in stretches, many of
// them side by side (before, each was an event: 0).
func TestLanesSideBySideAreExact(t *testing.T) {
	for _, ms := range simtest.Schemes() {
		p, err := core.Compose(ms[0], ms[1], core.DefaultModeParams())
		if err != nil {
			t.Fatal(err)
		}
		name := ms[0] + "/" + ms[1]
		first, seeds := int64(2), int64(2) // two GPUs
		if name == "salus/pack" {
			first, seeds = 1, 4
		}
		sided, forwardedIters, all := 0, 0, 0
		for seed := first; seed <= seeds; seed++ {
			tr := demandsDrawn(salusTrace(t, seed, 60), seed)
			gpus := 1 + int(seed%2)
			ag := bothEngines(t, agreeCase{
				name:  fmt.Sprintf("%s seed %d", name, seed),
				trace: tr,
				opts:  Options{Policy: p, Device: device.DefaultDevice(), GPUs: gpus},
				check: true,
			})
			if ag.diff != nil {
				t.Fatalf("%s seed %d on %d GPUs: side by side, %v", name, seed, gpus, ag.diff)
			}
			sided += ag.ff.sideBySide
			forwardedIters += ag.ff.iterations
			for _, j := range tr.Jobs {
				all += j.Iterations
			}
		}
		if name == "salus/pack" && (forwardedIters < all*95/100 || sided < all/4) {
			t.Errorf("%s: %d of %d iterations in stretches, %d of them side by side; want 95%% and a quarter", name, forwardedIters, all, sided)
		}
	}
}

// demandsDrawn gives each job of tr a demand of its own, drawn in [0.2, 1].
func demandsDrawn(tr *workload.Trace, seed int64) *workload.Trace {
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	for i := range tr.Jobs {
		prof := *tr.Jobs[i].Profile // shared with the catalog: a copy of its own
		prof.Demand = 0.2 + 0.8*rng.Float64()
		tr.Jobs[i].Profile = &prof
	}
	return tr
}

// The lanes side by side of several GPUs run together, in time order: no
// GPU's run goes past the first instant where another GPU's stops (a job's
// first or last iteration), so that the boundaries run are those taken, and
// a few more where a run is cut again. On 4 GPUs under pack, every job's
// results are the per-iteration engine's, and the boundaries run are within
// 1.5 times those taken (on 8 GPUs of the long jobs' trace, each GPU run to
// the next arrival first ran 2,136 million for 240 million taken).
func TestSidesRunTogether(t *testing.T) {
	p, err := core.Compose("salus", "pack", core.DefaultModeParams())
	if err != nil {
		t.Fatal(err)
	}
	tr, err := workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Salus100, Seed: 5, Jobs: 200, Load: 16})
	if err != nil {
		t.Fatal(err)
	}
	tr = demandsDrawn(tr, 5)
	ag := bothEngines(t, agreeCase{name: "4 GPUs side by side", trace: tr, opts: Options{Policy: p, Device: device.DefaultDevice(), GPUs: 4}, check: true})
	if ag.diff != nil {
		t.Fatalf("4 GPUs side by side: %v", ag.diff)
	}
	ff := ag.ff
	if ff.sideBySide == 0 || ff.sideRun > ff.sideBySide*3/2 {
		t.Errorf("the sides ran %d boundaries and took %d; want some, and at most 1.5 times as many run", ff.sideRun, ff.sideBySide)
	}
	t.Logf("boundaries run %d, taken %d", ff.sideRun, ff.sideBySide)
}

// boundaryTimes keeps each job's iteration ends (a per-iteration run's), or
// checks each stretch record's instant against them (a stretched run's): a
// stretch of n boundaries of a job ends at the instant of the job's boundary
// it reaches. A lane's turns are counted, not checked.
type boundaryTimes struct {
	ends    map[string][]float64
	counts  map[string]int
	checked int
	bad     []string
}

func (b *boundaryTimes) TakesTurns() bool { return true }

func (b *boundaryTimes) Emit(ev eventlog.Event) {
	switch {
	case b.counts == nil && ev.Kind == eventlog.IterEnd:
		b.ends[ev.Job] = append(b.ends[ev.Job], ev.T)
	case b.counts != nil && ev.Kind == eventlog.IterEnd:
		b.counts[ev.Job]++
	case b.counts != nil && ev.Kind == eventlog.Stretch && len(ev.Turns) > 0:
		for _, tn := range ev.Turns {
			b.counts[tn.Job] += tn.Iterations
		}
	case b.counts != nil && ev.Kind == eventlog.Stretch:
		b.counts[ev.Job] += ev.Iterations
		n, ends := b.counts[ev.Job], b.ends[ev.Job]
		b.checked++
		if n > len(ends) || ends[n-1] != ev.T {
			if len(b.bad) < 5 {
				want := "none"
				if n <= len(ends) {
					want = fmt.Sprint(ends[n-1])
				}
				b.bad = append(b.bad, fmt.Sprintf("%s's boundary %d at %v, want %s", ev.Job, n, ev.T, want))
			}
		}
	}
}

// A passive lane beside lanes that take turns (a job alone in its lane, its
// share unchanged by its own iterations) is not run boundary by boundary: its
// boundaries are counted at the run's end from the clock's segments. Each of
// its stretch records is at the per-iteration engine's instant of the
// boundary it reaches, also with the segments cut short (caught up every two
// re-bases), and every job's results are the per-iteration engine's.
func TestPassiveLanesKeepTheirInstants(t *testing.T) {
	p, err := core.Compose("salus", "pack", core.DefaultModeParams())
	if err != nil {
		t.Fatal(err)
	}
	for _, segs := range []int{maxSegs, 2} {
		checked, ran, taken := 0, 0, 0
		for seed := int64(1); seed <= 4; seed++ {
			tr := demandsDrawn(salusTrace(t, seed, 60), seed)
			gpus := 1 + int(seed%2)
			perIter := &boundaryTimes{ends: map[string][]float64{}}
			stretched := &boundaryTimes{counts: map[string]int{}, ends: perIter.ends}
			ag := bothEngines(t, agreeCase{
				name:    fmt.Sprintf("segments %d, seed %d", segs, seed),
				trace:   tr,
				opts:    Options{Policy: p, Device: device.DefaultDevice(), GPUs: gpus},
				maxSegs: segs,
				sinks: func(perIteration bool) eventlog.Sink {
					if perIteration {
						return perIter
					}
					return stretched // checked against perIter's ends: it runs second
				},
			})
			if ag.diff != nil {
				t.Fatalf("segments %d, seed %d: %v", segs, seed, ag.diff)
			}
			ran, taken = ran+ag.ff.sideRun, taken+ag.ff.sideBySide
			if len(stretched.bad) > 0 {
				t.Fatalf("segments %d, seed %d: %d stretch records checked, these at the wrong instant:\n%s", segs, seed, stretched.checked, strings.Join(stretched.bad, "\n"))
			}
			checked += stretched.checked
		}
		if checked < 100 {
			t.Errorf("segments %d: %d stretch records checked, want 100 or more", segs, checked)
		}
		// The passive lanes' boundaries are taken, not run.
		if ran > taken*3/4 {
			t.Errorf("segments %d: %d boundaries run for %d taken side by side; want at most three quarters", segs, ran, taken)
		}
		t.Logf("segments %d: %d stretch records checked; boundaries run %d, taken %d", segs, checked, ran, taken)
	}
}

// Pack's two lanes that both take turns run a loop of their own (advanceTwo)
// under the co-location model: on one GPU it runs, every event of the log is
// the one the general loop (advanceOwn) writes, and every job's result is the
// per-iteration engine's.
func TestTwoLanesTakeTheirOwnLoop(t *testing.T) {
	p, err := core.Compose("salus", "pack", core.DefaultModeParams())
	if err != nil {
		t.Fatal(err)
	}
	twos := 0
	for seed := int64(1); seed <= 3; seed++ {
		tr := demandsDrawn(salusTrace(t, seed, 60), seed)
		opts := Options{Policy: p, Device: device.DefaultDevice(), Interference: interference.Builtin()}
		ag := bothEngines(t, agreeCase{name: fmt.Sprintf("pack seed %d", seed), trace: tr, opts: opts, check: true})
		if ag.diff != nil {
			t.Fatalf("seed %d: %v", seed, ag.diff)
		}
		twos += ag.ff.twoLanes
		logs := [2][]eventlog.Event{}
		for i, own := range []bool{true, false} {
			twoLaneLoop = own
			o := opts
			o.Sink = sinkFunc(func(e eventlog.Event) { logs[i] = append(logs[i], e) })
			err := run(tr, o, false, nil)
			twoLaneLoop = true
			if err != nil {
				t.Fatal(err)
			}
		}
		if len(logs[0]) != len(logs[1]) {
			t.Fatalf("seed %d: %d events with the two lanes' loop, %d with the general one", seed, len(logs[0]), len(logs[1]))
		}
		for i := range logs[0] {
			if a, b := logs[0][i], logs[1][i]; fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("seed %d, event %d: the two lanes' loop wrote\n%+v\nthe general one\n%+v", seed, i, a, b)
			}
		}
	}
	if twos == 0 {
		t.Error("no run of two lanes took the loop of its own")
	}
}
