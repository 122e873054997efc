package sim

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/sim/simtest"
	"github.com/salusgo/salus/workload"
)

// gridTrace is jobs whose arrivals, start-ups and iterations fall on a grid of
// quarter seconds, so that boundaries of jobs on different GPUs, arrivals and
// ends meet at the same instants; some are gangs of two GPUs, some of a higher
// priority.
func gridTrace(seed uint64, jobs int) *workload.Trace {
	rng := rand.New(rand.NewPCG(seed, 5))
	tr := &workload.Trace{Name: fmt.Sprintf("grid-%d", seed)}
	arrival := 0.0
	for i := range jobs {
		arrival += float64(rng.IntN(8)) * 0.25
		j := traceJob(fmt.Sprintf("g%02d", i), arrival, 1+rng.IntN(40), 0.25*float64(1+rng.IntN(8)), 0.25*float64(rng.IntN(3)), 2000, 1000)
		if rng.IntN(6) == 0 {
			j.GPUs = 2
		}
		j.Priority = rng.IntN(2)
		tr.Jobs = append(tr.Jobs, j)
	}
	return tr
}

// A job alone on its GPU is parked until its last iteration in a sealed lane
// (exclusive GPUs), or until an admission may reach its GPU (the horizon):
// under every registered scheme, the per-job results are those of the
// iteration-by-iteration engine, on traces whose boundaries meet arrivals,
// ends and each other at the same instants, on 2 to 40 GPUs (the GPUs without
// a lane running out, or not), with gangs beside, start-up as GPU work or not,
// on clusters of nodes of several sizes and models, and admission by arrival
// or by the policy.
func TestParkedJobsAreExact(t *testing.T) {
	parked, runs, onClusters, gangs := 0, 0, 0, 0
	for _, ms := range simtest.Schemes() {
		for _, admission := range []string{"arrival", "policy"} {
			params := core.DefaultModeParams()
			params.Admission = admission
			p, err := core.Compose(ms[0], ms[1], params)
			if err != nil {
				t.Fatal(err)
			}
			for seed := uint64(1); seed <= 8; seed++ {
				trace := gridTrace(seed, 30)
				if seed%4 == 0 {
					trace = simtest.RandomTrace(seed, 30)
				}
				gpus := []int{12, 3, 8, 40}[seed%4]
				dev := device.DefaultDevice()
				dev.StartupIsGPUWork = seed%3 == 0
				o := Options{Policy: p, Device: dev, GPUs: gpus}
				if seed%3 == 1 {
					// A cluster: nodes of 4, 3 and 2 GPUs of two models, their jobs
					// placed on the first node that takes them, or the least loaded.
					o.Cluster = yamlCluster(t, "shapes:\n  - {count: 1, gpus: 4, model: p100}\n  - {count: 1, gpus: 3, model: v100}\n  - {count: 1, gpus: 2, model: p100}\n")
					if seed > 4 {
						o.NodePlacement = core.LeastLoadedNode{}
					}
				}
				if seed == 2 {
					// Nodes of 2 GPUs, and of 4 that take any job they take: under
					// least-loaded, the empty ones count towards the bound too.
					o.Cluster = yamlCluster(t, "shapes:\n  - {count: 6, gpus: 2, model: p100}\n  - {count: 2, gpus: 4, model: p100}\n")
					o.NodePlacement = core.LeastLoadedNode{}
				}
				if testing.Verbose() {
					t.Logf("%s/%s %s seed %d", ms[0], ms[1], admission, seed)
				}
				ag := bothEngines(t, agreeCase{
					name:  fmt.Sprintf("%s/%s %s seed %d on %d GPUs", ms[0], ms[1], admission, seed, gpus),
					trace: trace,
					opts:  o,
					check: true, // on a cluster, each GPU's memory its own
				})
				runs += 2
				parked += ag.ff.parked
				gangs += ag.ff.parkedGangs
				if o.Cluster != nil && p.Mode != core.ModeExclusive {
					onClusters += ag.ff.parked
				}
				if ag.diff != nil {
					t.Fatalf("%s/%s %s seed %d on %d GPUs: %v", ms[0], ms[1], admission, seed, gpus, ag.diff)
				}
			}
		}
	}
	if parked == 0 || onClusters == 0 || gangs == 0 {
		t.Fatalf("%d jobs parked, %d on clusters under the schemes that share GPUs, %d gangs: want some of each", parked, onClusters, gangs)
	}
	t.Logf("%d runs, %d jobs parked, %d on clusters under the schemes that share GPUs, %d gangs", runs, parked, onClusters, gangs)
}

// A parked job's stretch outlives the events of other GPUs: with a GPU for
// every job, each job's boundaries are one stretch record, however many jobs
// arrive and end while it runs, and the log stays in time order.
func TestSealedJobIsOneStretch(t *testing.T) {
	tr := &workload.Trace{Name: "overlap"}
	for i := range 12 {
		// Each arrives while the ones before it run: 0.3 s apart, 40 to 62 iterations of 0.1 s.
		tr.Jobs = append(tr.Jobs, traceJob(fmt.Sprintf("j%02d", i), 0.3*float64(i), 40+2*i, 0.1, 0, 2000, 1000))
	}
	p, _ := core.Lookup("fifo")
	records := map[string]int{}
	iterations := map[string]int{}
	last := 0.0
	sink := sinkFunc(func(e eventlog.Event) {
		if e.T < last {
			t.Fatalf("%s of %s at %v, after an event at %v", e.Kind, e.Job, e.T, last)
		}
		last = e.T
		switch e.Kind {
		case eventlog.Stretch:
			records[e.Job]++
			iterations[e.Job] += e.Iterations
		case eventlog.IterEnd:
			iterations[e.Job]++
		}
	})
	if err := Run(tr, Options{Policy: p, Device: device.DefaultDevice(), GPUs: 12, Sink: sink}); err != nil {
		t.Fatal(err)
	}
	for _, j := range tr.Jobs {
		if records[j.ID] != 1 || iterations[j.ID] != j.Iterations {
			t.Errorf("job %s: %d stretch records, %d iterations: want one record and %d iterations",
				j.ID, records[j.ID], iterations[j.ID], j.Iterations)
		}
	}
}

// The stretches look at the GPUs whose jobs are not parked, not at every busy
// one: the same jobs on 64 and on 8,192 GPUs cost about as many looks, a few a
// job, where every arrival looked at every running job before. Under the
// policies that share a GPU, jobs are parked where GPUs without a lane are to
// spare (8,192 GPUs for 300 jobs).
func TestParkedCostFollowsDecisions(t *testing.T) {
	tr := longTrace(2, 300, 3_000_000)
	for _, c := range []struct {
		policy string
		gpus   int
	}{{"fifo", 64}, {"fifo", 8192}, {"srtf", 8192}, {"fair", 8192}, {"pack", 8192}} {
		p, _ := core.Lookup(c.policy)
		var f forwarded
		if err := run(tr, Options{Policy: p, Device: device.DefaultDevice(), GPUs: c.gpus}, false, &f); err != nil {
			t.Fatal(err)
		}
		if f.scanned > 8*len(tr.Jobs) || f.parked < len(tr.Jobs) {
			t.Errorf("%s on %d GPUs: the stretches looked at %d GPUs and parked %d jobs for %d jobs: want at most 8 looks a job, every job parked",
				c.policy, c.gpus, f.scanned, f.parked, len(tr.Jobs))
		}
	}
}

// A parked job that wakes before the next arrival is taken with the stretch
// of the others, its record among theirs: its wake is no instant of its own,
// so it ends no other job's stretch (each arrival does). Before, each wake
// cut every running job's stretch: 5,459 GPUs looked at for these 3,000 jobs.
func TestWakesCutNoStretch(t *testing.T) {
	tr := longTrace(2, 3000, 3_000_000)
	for _, policy := range []string{"fifo", "srtf", "fair"} {
		p, _ := core.Lookup(policy)
		var f forwarded
		if err := run(tr, Options{Policy: p, Device: device.DefaultDevice(), GPUs: 64}, false, &f); err != nil {
			t.Fatal(err)
		}
		jobs := len(tr.Jobs)
		if f.parked < jobs || f.woken+f.wokenEarly != f.parked || f.woken > jobs/100 || f.scanned > jobs*11/10 {
			t.Errorf("%s: %d jobs, %d parked, %d woken at an instant of their own, %d within a stretch, %d GPUs looked at: want every job parked, at most 1%% woken at their own instant, at most 1.1 looks a job",
				policy, jobs, f.parked, f.woken, f.wokenEarly, f.scanned)
		}
	}
}
