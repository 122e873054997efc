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
