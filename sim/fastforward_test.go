package sim

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/sim/simtest"
	"github.com/salusgo/salus/workload"
)

// TestFastForwardIsExact runs random traces under every registered scheme with
// and without fast-forward, on one GPU and on two, and wants byte-identical event
// logs; and it checks that fast-forward did run (the core's Continue said yes).
func TestFastForwardIsExact(t *testing.T) {
	skipped := 0
	for _, ms := range simtest.Schemes() {
		p, err := core.Compose(ms[0], ms[1], core.DefaultModeParams())
		if err != nil {
			t.Fatal(err)
		}
		for seed := uint64(1); seed <= 4; seed++ {
			trace := simtest.RandomTrace(seed, 20)
			gpus := 1 + int(seed%2)
			logOf := func(noFF bool) ([]byte, int) {
				var buf bytes.Buffer
				w := eventlog.NewWriter(&buf)
				dev := device.DefaultDevice()
				dev.IterOverheadS = float64(seed%2) * 0.0005
				dev.StartupIsGPUWork = seed > 2 // the first iteration carries the start-up
				var e int
				if err := run(trace, Options{Policy: p, Device: dev, GPUs: gpus, Sink: w}, noFF, &e); err != nil {
					t.Fatalf("%s/%s seed %d: %v", ms[0], ms[1], seed, err)
				}
				w.Flush()
				return buf.Bytes(), e
			}
			slow, _ := logOf(true)
			fast, ff := logOf(false)
			if !bytes.Equal(slow, fast) {
				t.Fatalf("%s/%s seed %d on %d GPUs: the logs differ with fast-forward (%s)", ms[0], ms[1], seed, gpus, firstDiff(slow, fast))
			}
			if ff == 0 {
				skipped++
			}
		}
	}
	if skipped == len(simtest.Schemes())*4 {
		t.Fatal("fast-forward never ran")
	}
}

func firstDiff(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) {
			return fmt.Sprintf("line %d: %s | %s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("%d lines against %d", len(la), len(lb))
}

// The fast path's speed on a trace of long jobs, one at a time (fifo).
func BenchmarkFastForwardFIFO(b *testing.B) {
	tr, _ := workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Salus100, Seed: 1, Load: 1})
	p, _ := core.Lookup("fifo")
	for range b.N {
		if err := Run(tr, Options{Policy: p, Device: device.DefaultDevice()}); err != nil {
			b.Fatal(err)
		}
	}
}

// emitOnly hides a sink's Boundary: it gets the two events of each boundary.
type emitOnly struct{ eventlog.Sink }

// The metrics of a run are the same whether the collector takes the boundaries of
// fast-forwarded iterations in one call or as their two events.
func TestBoundariesGiveTheSameMetrics(t *testing.T) {
	for _, ms := range simtest.Schemes() {
		p, err := core.Compose(ms[0], ms[1], core.DefaultModeParams())
		if err != nil {
			t.Fatal(err)
		}
		trace := simtest.RandomTrace(5, 25)
		resultOf := func(wrap bool) metrics.Result {
			c := metrics.NewCollector()
			var sink eventlog.Sink = c
			if wrap {
				sink = emitOnly{c}
			}
			if err := Run(trace, Options{Policy: p, Device: device.DefaultDevice(), Sink: sink}); err != nil {
				t.Fatal(err)
			}
			res, err := c.Result()
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		if a, b := resultOf(false), resultOf(true); !reflect.DeepEqual(a, b) {
			t.Fatalf("%s/%s: metrics differ:\n%+v\n%+v", ms[0], ms[1], a, b)
		}
	}
}
