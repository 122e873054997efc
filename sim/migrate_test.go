package sim

import (
	"fmt"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/sim/simtest"
)

// migrations counts the migrate events of a log and the memory they copied,
// and checks that each one's job starts its next iteration on the GPU it
// moved to, with that copy.
type migrations struct {
	t      *testing.T
	n      int
	copied float64
	want   map[string]eventlog.Event // the job's migration, until its next start
}

func (m *migrations) Emit(e eventlog.Event) {
	switch e.Kind {
	case eventlog.Migrate:
		m.n++
		m.copied += e.CopyMiB
		m.want[e.Job] = e
	case eventlog.IterStart:
		if w, ok := m.want[e.Job]; ok {
			delete(m.want, e.Job)
			if e.Lane != w.Lane || e.CopyMiB < w.CopyMiB {
				m.t.Fatalf("t=%v: %s starts in lane %d copying %v MiB after it moved to lane %d copying %v MiB", e.T, e.Job, e.Lane, e.CopyMiB, w.Lane, w.CopyMiB)
			}
		}
	}
}

// With migration on, the sharing schemes move jobs between GPUs on random
// traces; every migration's job starts next in its new lane, paying its copy;
// the conformance checks hold (no job moves while it runs, each GPU within
// its memory); and the stretches give every job the per-iteration engine's
// result, under the least-loaded GPU placement and the least-work one.
// Without it, the same runs move none.
func TestMigrationThroughBothEngines(t *testing.T) {
	moved := 0
	for _, ms := range [][2]string{{"salus", "srtf"}, {"salus", "fair"}, {"salus", "pack"}, {"salus", "las"}, {"suspend", "srtf"}} {
		for seed := uint64(1); seed <= 4; seed++ {
			for _, migrate := range []bool{false, true} {
				mp := core.DefaultModeParams()
				mp.Migrate = migrate
				p, err := core.Compose(ms[0], ms[1], mp)
				if err != nil {
					t.Fatal(err)
				}
				dev := device.DefaultDevice()
				dev.IterOverheadS = 0    // the stretches' case
				var gp core.GPUPlacement // the default, least-loaded; least-work on even seeds
				if seed%2 == 0 {
					gp = core.LeastWork{}
				}
				logs := map[bool]*migrations{}
				name := fmt.Sprintf("%s/%s seed %d migrate %v", ms[0], ms[1], seed, migrate)
				a := bothEngines(t, agreeCase{
					name:  name,
					trace: simtest.RandomTrace(seed, 40),
					opts:  Options{Policy: p, Device: dev, GPUs: 3, GPUPlacement: gp},
					check: true,
					sinks: func(perIteration bool) eventlog.Sink {
						logs[perIteration] = &migrations{t: t, want: map[string]eventlog.Event{}}
						return logs[perIteration]
					},
				})
				if a.diff != nil {
					t.Fatalf("%s: %v", name, a.diff)
				}
				slow, fast := logs[true], logs[false]
				if slow.n != fast.n || slow.copied != fast.copied {
					t.Fatalf("%s: %d migrations copying %v MiB per iteration, %d copying %v with stretches", name, slow.n, slow.copied, fast.n, fast.copied)
				}
				if !migrate && slow.n > 0 {
					t.Fatalf("%s: %d migrations with migration off", name, slow.n)
				}
				if migrate {
					moved += slow.n
				}
			}
		}
	}
	if moved == 0 {
		t.Fatal("no job migrated on any trace: the test tests nothing")
	}
}
