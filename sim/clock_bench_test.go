package sim

import (
	"testing"
	"time"

	"github.com/salusgo/salus/interference"
)

// BenchmarkSwitchArithmetic is the least a switch of lanes side by side costs
// under a co-location model, with nothing of the run around it: the clock
// arithmetic alone. Two lanes each run an iteration on a clock of its own; at
// each switch the lane that ends first starts another job's iteration (a
// clock of its own from then, at its slowdown), the other lane's clock is
// re-based at the instant to its new slowdown (a division), and both ends are
// timed again. Each step depends on the one before, as in a run: what it
// measures is the latency of that chain (ns/op is per switch), the floor of
// salus bench's ns/switch. docs/simulator.md quotes it.
func BenchmarkSwitchArithmetic(b *testing.B) {
	press := [4]int64{1 << 30, 3 << 29, 1 << 31, 5 << 28} // fixed-point terms of four jobs
	var a, o clock
	a.share, o.share = 1, 1
	fa, fo := vtime{i: 40_000_000}, vtime{i: 55_000_000}
	var at time.Duration
	n := 0
	for b.Loop() {
		ea, eo := a.endAfter(fa, at), o.endAfter(fo, at)
		if eo < ea {
			a, o, fa, fo, ea = o, a, fo, fa, eo // the lane that ends first is a
		}
		at = ea
		n++
		a = clock{t0: at, share: interference.SlowdownOf(press[n&3])}
		fa = vtime{i: 40_000_000 + int64(n&7)*1_000_000}
		o.reRate(at, interference.SlowdownOf(press[(n+1)&3]))
	}
	if at <= 0 {
		b.Fatal("no switch")
	}
}
