package sim

import (
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/sim/simtest"
	"github.com/salusgo/salus/workload"
)

// defragLog checks, as the log is written, that every defrag event is followed by
// the memory of the lane it names, and counts the splits and merges.
type defragLog struct {
	t              *testing.T
	splits, merges int
	expect         int // the lane whose memory must come next; -1 when none
	seen           bool
}

func (d *defragLog) Emit(e eventlog.Event) {
	switch e.Kind {
	case eventlog.Defrag:
		if d.expect >= 0 && !d.seen {
			d.t.Fatalf("t=%v: defrag of lane %d with no memory event after it", e.T, d.expect)
		}
		switch e.Reason {
		case "split":
			d.splits++
		case "merge":
			d.merges++
		default:
			d.t.Fatalf("t=%v: defrag event with reason %q", e.T, e.Reason)
		}
		d.expect, d.seen = e.Lane, false
	case eventlog.Memory:
		if e.Lane == d.expect {
			d.seen = true
		}
	}
}

// On the generated trace at load 2, pack-defrag splits lanes (and never merges),
// pack-merge does both; every split or merge keeps the conformance invariants (no
// lane changed while an iteration runs in it, the lanes of a GPU within its
// memory, each lane holding its jobs), the metrics count each once, and splitting
// beats plain pack on average JCT and makespan on this trace.
func TestDefragOnTheGeneratedTrace(t *testing.T) {
	trace, err := workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Salus100, Seed: 1, Load: 2})
	if err != nil {
		t.Fatal(err)
	}
	dev := device.DefaultDevice()
	results := map[string]metrics.Result{}
	logs := map[string]*defragLog{}
	for _, name := range []string{"pack", "pack-defrag", "pack-merge"} {
		p, err := core.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		col := metrics.NewCollector()
		d := &defragLog{t: t, expect: -1}
		if err := Run(trace, Options{Policy: p, Device: dev, Sink: eventlog.Sinks{simtest.NewChecker(t, dev.CapacityMiB, false), col, d}}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if results[name], err = col.Result(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := results[name].Defrags; got != d.splits+d.merges {
			t.Errorf("%s: metrics count %d defrags, the log has %d", name, got, d.splits+d.merges)
		}
		logs[name] = d
	}
	if d := logs["pack"]; d.splits+d.merges != 0 {
		t.Errorf("pack regrouped lanes (%d splits, %d merges): it does not defragment", d.splits, d.merges)
	}
	if d := logs["pack-defrag"]; d.splits == 0 || d.merges != 0 {
		t.Errorf("pack-defrag: %d splits and %d merges; want splits only", d.splits, d.merges)
	}
	if d := logs["pack-merge"]; d.merges == 0 {
		t.Errorf("pack-merge never merged (%d splits)", d.splits)
	}
	pack, defrag := results["pack"], results["pack-defrag"]
	if defrag.AvgJCTS >= pack.AvgJCTS || defrag.MakespanS >= pack.MakespanS {
		t.Errorf("pack-defrag: average JCT %.0f s, makespan %.0f s; pack: %.0f s, %.0f s: splitting did not help",
			defrag.AvgJCTS, defrag.MakespanS, pack.AvgJCTS, pack.MakespanS)
	}
}

// Under defragmentation with jobs waiting, a lane whose boundaries can
// neither split it nor merge it (its jobs and sizes, the GPU's free memory and
// the first waiting job say so, and a boundary changes none of them) takes
// stretches, alone or in turns: every job's result is the per-iteration
// engine's, splits and merges included, and most iterations are stretched:
// on this trace, over half (plain pack's lanes side by side: 39%), where none
// was while a job waited before (pack-defrag took over 60 s at 100,000 jobs).
func TestDefragStretchesWhileJobsWait(t *testing.T) {
	for _, name := range []string{"pack-defrag", "pack-merge", "srtf-pack-defrag"} {
		p, err := core.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		tr := salusTrace(t, 3, 150)
		all := 0
		for _, j := range tr.Jobs {
			all += j.Iterations
		}
		logs := map[bool]*defragLog{}
		ag := bothEngines(t, agreeCase{
			name:  name,
			trace: tr,
			opts:  Options{Policy: p, Device: device.DefaultDevice()},
			check: true,
			sinks: func(perIteration bool) eventlog.Sink {
				logs[perIteration] = &defragLog{t: t, expect: -1}
				return logs[perIteration]
			},
		})
		if ag.diff != nil {
			t.Fatalf("%s: %v", name, ag.diff)
		}
		ff, wantLog, gotLog := ag.ff, logs[true], logs[false]
		if gotLog.splits != wantLog.splits || gotLog.merges != wantLog.merges {
			t.Errorf("%s: %d splits and %d merges, want %d and %d", name, gotLog.splits, gotLog.merges, wantLog.splits, wantLog.merges)
		}
		if ff.iterations < all/2 {
			t.Errorf("%s: %d of %d iterations in stretches, want half", name, ff.iterations, all)
		}
		t.Logf("%s: %d of %d iterations stretched, %d splits, %d merges", name, ff.iterations, all, gotLog.splits, gotLog.merges)
	}
}

// A Decide that merges lanes twice, admitting a job after each merge, logs
// each lane's memory as that decision left it: the lanes in the log never
// allocate more than the GPU holds between two decisions of one batch
// (the memory checker). Logged from the scheduler's lanes after the whole
// batch, the first merge's lane was logged at its final size while the lane
// the second merge closes was still open: 17,739.5 MiB of 14,336.
func TestMergesOfOneDecideLogTheirOwnLanes(t *testing.T) {
	p, err := core.Compose("salus", "pack-merge", core.DefaultModeParams())
	if err != nil {
		t.Fatal(err)
	}
	dev := device.DefaultDevice()
	dev.StartupIsGPUWork = false
	a := bothEngines(t, agreeCase{name: "pack-merge, seed 327", trace: simtest.RandomTrace(327, 12),
		opts: Options{Policy: p, Device: dev, GPUs: 1}, check: true})
	if a.diff != nil {
		t.Fatal(a.diff)
	}
}
