package bench

import (
	"runtime"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/sim"
	"github.com/salusgo/salus/workload"
)

// heapAtLast measures the live heap when the last job of a run of n jobs
// arrives (a forced collection, then HeapAlloc): the run's peak, at load 4,
// where the GPU falls behind and most jobs still wait.
type heapAtLast struct {
	n    int
	heap uint64
}

func (h *heapAtLast) Emit(e eventlog.Event) {
	if e.Kind == eventlog.Arrive && e.Handle == h.n {
		h.heap = liveHeap()
	}
}

// Boundary and TakesTurns: the run goes as under salus bench (counter).
func (h *heapAtLast) Boundary(string, int, int, float64, float64) {}
func (h *heapAtLast) TakesTurns() bool                            { return true }

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// The memory a run holds for each job at its peak, what salus bench --jobs
// 1000000 needs (under 1 GiB of resident memory: a live heap under about 480
// bytes a job, the collector letting the heap grow to twice what is live):
// at the last arrival of a salus100 trace at load 4, most of the jobs wait
// (about three quarters under fifo), each with its state in the simulator,
// the core and the metrics' tracker, and every job that arrived has its
// tracker's record. 860 bytes a job under fifo before the waiting jobs'
// state was made smaller.
func TestLiveHeapPerJob(t *testing.T) {
	if testing.Short() {
		t.Skip("a run of 20,000 jobs")
	}
	const n, limit = 20000, 480
	dev, err := device.Preset("p100")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct{ mode, policy string }{{core.ModeExclusive, "fifo"}, {core.ModeSalus, "srtf"}, {core.ModeSalus, "fair"}} {
		p, err := core.Compose(s.mode, s.policy, core.DefaultModeParams())
		if err != nil {
			t.Fatal(err)
		}
		tr, err := workload.GenerateStream(workload.Default(), workload.GenOptions{Kind: workload.Salus100, Seed: 1, Jobs: n, Load: 4})
		if err != nil {
			t.Fatal(err)
		}
		col, probe := metrics.NewCollector(), &heapAtLast{n: n}
		before := liveHeap()
		if err := sim.RunStream(tr, sim.Options{Policy: p, Device: dev, Sink: eventlog.Sinks{col, probe}}); err != nil {
			t.Fatal(err)
		}
		runtime.KeepAlive(col)
		perJob := (float64(probe.heap) - float64(before)) / n
		t.Logf("%s %s: %.0f bytes a job at the last arrival", s.mode, s.policy, perJob)
		if perJob > limit {
			t.Errorf("%s %s: %.0f bytes a job at the last arrival, want at most %d", s.mode, s.policy, perJob, limit)
		}
	}
}
