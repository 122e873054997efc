package live

import (
	"bytes"
	"context"
	"math"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/sim"
	"github.com/salusgo/salus/workload"
)

// twoGPUTrace has 4 compute-heavy jobs (demand 0.8) with inline profiles,
// arriving 50 ms apart: least-loaded places them on GPUs 0, 1, 0, 1, so each GPU
// runs a pair side by side, slowed by the sum of their demands (1.6), while on
// one GPU the four would run 3.2 times slower.
const twoGPUTrace = `job_id,model,batch_size,iterations,arrival_s,iter_s,startup_s,persistent_mib,ephemeral_mib,demand
g0,m0,1,40,0,0.03,0.05,500,1000,0.8
g1,m1,1,30,0.05,0.04,0.05,500,1000,0.8
g2,m2,1,25,0.1,0.035,0.05,500,1000,0.8
g3,m3,1,50,0.15,0.02,0.05,500,1000,0.8
`

// admits records the node GPU of each job's admission.
type admits struct {
	mu  sync.Mutex
	gpu map[string]int
}

func (a *admits) Emit(e eventlog.Event) {
	if e.Kind != eventlog.Admit {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gpu[e.Job] = e.GPUIndex
}

// TestLiveGPUsAgreeWithSimulator replays a trace on a daemon that emulates a node
// of two GPUs, with real worker processes: every pair of jobs lands on its own
// GPU, as in the simulator, and the makespan and average JCT agree with the
// simulator's on two GPUs within 5 percent (and are far from one GPU's).
func TestLiveGPUsAgreeWithSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for a few seconds")
	}
	tr, err := workload.ParseTrace([]byte(twoGPUTrace), "two-gpus.csv", "two-gpus", workload.Default())
	if err != nil {
		t.Fatal(err)
	}
	dev := device.Device{Name: "test", TotalMiB: 16384, CapacityMiB: 14336}
	p, err := core.Lookup("pack")
	if err != nil {
		t.Fatal(err)
	}
	node := func(tr *workload.Trace, dev device.Device, gpus int) (metrics.Result, map[string]int) {
		t.Helper()
		c, a := metrics.NewCollector(), &admits{gpu: map[string]int{}}
		if err := sim.Run(tr, sim.Options{Policy: p, Device: dev, Sink: eventlog.Sinks{c, a}, GPUs: gpus}); err != nil {
			t.Fatal(err)
		}
		r, err := c.Result()
		if err != nil {
			t.Fatal(err)
		}
		return r, a.gpu
	}
	raw, simGPU := node(tr, dev, 2)
	one, _ := node(tr, dev, 1)

	var out bytes.Buffer
	live := &admits{gpu: map[string]int{}}
	got, err := RunLive(context.Background(), tr, Options{Policy: p, Device: dev, GPUs: 2,
		Exe: os.Args[0], Env: []string{workerEnv}, Output: &out, Prelaunch: 3 * time.Second, Log: live})
	if err != nil {
		t.Fatalf("%v\nworkers said:\n%s", err, out.String())
	}
	lag := got.Emulation.MeanLag()
	ctr, cdev := calibrated(tr, p, dev, lag)
	want, _ := node(ctr, cdev, 2)
	t.Logf("two GPUs: live makespan %.3f s, avg JCT %.3f s; sim %.3f s, %.3f s (calibrated with %.3f ms per iteration: %.3f s, %.3f s); one GPU: sim %.3f s; GPUs live %v sim %v",
		got.MakespanS, got.AvgJCTS, raw.MakespanS, raw.AvgJCTS, 1e3*lag.Seconds(), want.MakespanS, want.AvgJCTS, one.MakespanS, live.gpu, simGPU)
	if got.Finished != len(tr.Jobs) {
		t.Fatalf("live run finished %d of %d jobs", got.Finished, len(tr.Jobs))
	}
	perGPU := map[int]int{}
	for _, j := range tr.Jobs {
		g, ok := live.gpu[j.ID]
		if !ok {
			t.Fatalf("no admit event of %s in the live log", j.ID)
		}
		perGPU[g]++
		if g != simGPU[j.ID] {
			t.Errorf("%s admitted on GPU %d live, on GPU %d in the simulator", j.ID, g, simGPU[j.ID])
		}
	}
	if perGPU[0] != 2 || perGPU[1] != 2 {
		t.Errorf("jobs per GPU %v: want a pair on each of the two", perGPU)
	}
	for _, c := range []struct {
		what           string
		live, sim, raw float64
	}{{"makespan", got.MakespanS, want.MakespanS, raw.MakespanS}, {"average JCT", got.AvgJCTS, want.AvgJCTS, raw.AvgJCTS}} {
		if d, tol := math.Abs(c.live-c.sim)/c.sim, within(c.raw, c.sim); d > tol {
			t.Errorf("%s: live %.3f s vs sim %.3f s on two GPUs (%.1f%% apart, want <= %.1f%%)", c.what, c.live, c.sim, 100*d, 100*tol)
		}
	}
	if got.MakespanS > 0.8*one.MakespanS {
		t.Errorf("live makespan %.3f s on two GPUs is not well below one GPU's %.3f s: the GPUs did not run side by side", got.MakespanS, one.MakespanS)
	}
}
