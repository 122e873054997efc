package sim

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/sim/simtest"
	"github.com/salusgo/salus/workload"
)

// longTrace is jobs that run for weeks to months (a service's jobs): iterations
// of 5 to 60 s, about iters of them in all, arriving over a year, each with the
// memory and demand of a catalog profile.
func longTrace(seed uint64, jobs int, iters int64) *workload.Trace {
	rng := rand.New(rand.NewPCG(seed, 17))
	profiles := workload.Default().Profiles()
	tr := &workload.Trace{Name: "long"}
	per := float64(iters) / float64(jobs)
	arrival := 0.0
	for i := range jobs {
		arrival += rng.ExpFloat64() * 365 * 86400 / float64(jobs)
		n := 1 + int(per*(0.5+rng.Float64()))
		p := profiles[rng.IntN(len(profiles))]
		j := traceJob(fmt.Sprintf("s%05d", i), arrival, n, 5+55*rng.Float64(), 1+rng.Float64()*30, p.PersistentMiB, p.EphemeralMiB)
		j.Profile.Demand = p.Demand
		tr.Jobs = append(tr.Jobs, j)
	}
	return tr
}

// Long jobs on several GPUs: the results of stretches are those of the
// iteration-by-iteration engine under every registered scheme (a small
// instance of the benchmark's trace).
func TestLongJobsAreExact(t *testing.T) {
	tr := longTrace(1, 60, 600_000)
	for _, ms := range simtest.Schemes() {
		p, err := core.Compose(ms[0], ms[1], core.DefaultModeParams())
		if err != nil {
			t.Fatal(err)
		}
		name := ms[0] + "/" + ms[1]
		if ag := bothEngines(t, agreeCase{name: name, trace: tr, opts: Options{Policy: p, Device: device.DefaultDevice(), GPUs: 8}}); ag.diff != nil {
			t.Fatalf("%s: %v", name, ag.diff)
		}
	}
}

// The check: 6,000 jobs of 300 million iterations in all, on 8, 64 and
// 8,192 GPUs (go test ./sim -run - -bench LongJobs -benchtime 1x).
func BenchmarkLongJobs(b *testing.B) {
	tr := longTrace(1, 6000, 300_000_000)
	for _, name := range []string{"fifo", "srtf", "pack", "fair"} {
		p, _ := core.Lookup(name)
		for _, gpus := range []int{8, 64, 8192} {
			b.Run(fmt.Sprintf("%s/gpus=%d", name, gpus), func(b *testing.B) {
				for range b.N {
					c := metrics.NewCollector()
					if err := Run(tr, Options{Policy: p, Device: device.DefaultDevice(), GPUs: gpus, Sink: c}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
