package live

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/workload"
)

type starts struct {
	mu sync.Mutex
	t  []float64
}

func (s *starts) Emit(e eventlog.Event) {
	if e.Kind == eventlog.IterStart {
		s.mu.Lock()
		s.t = append(s.t, e.T)
		s.mu.Unlock()
	}
}

// BenchmarkWorkerProcess measures the per-iteration cycle of a real worker process
// (the test binary acting as `salus worker`) against an in-process daemon over the
// Unix socket: iterations of 1 µs, so the cycle is the end+next round trip between
// two processes. It reports the median and p99 from the daemon's event log.
func BenchmarkWorkerProcess(b *testing.B) {
	p, _ := core.Lookup("pack")
	n := max(b.N, 200)
	tr := &workload.Trace{Name: "bench", Jobs: []workload.Job{{ID: "w", Iterations: n,
		Profile: &workload.Profile{IterS: 1e-6, Demand: 1, PersistentMiB: 1, EphemeralMiB: 1}}}}
	st := &starts{}
	b.ResetTimer()
	if _, err := Run(context.Background(), tr, Options{Policy: p, CapacityMiB: 1000, Exe: os.Args[0], Env: []string{workerEnv}, Log: st}); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	var d []float64
	for i := 1; i < len(st.t); i++ {
		d = append(d, 1e6*(st.t[i]-st.t[i-1]))
	}
	slices.Sort(d)
	b.ReportMetric(d[len(d)/2], "median-µs")
	b.ReportMetric(d[int(0.99*float64(len(d)))], "p99-µs")
}
