package replay

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/metrics"
	"github.com/salusgo/salus/sim"
	"github.com/salusgo/salus/workload"
)

const workerEnv = "SALUS_REPLAY_TEST_WORKER=1"

// TestMain lets the test binary act as `salus worker`, so the tests launch real
// worker processes without building the command first.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "worker" && os.Getenv("SALUS_REPLAY_TEST_WORKER") == "1" {
		w, err := ParseWorker(os.Args[2:], workload.Default())
		if err == nil {
			err = w.Run(context.Background())
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// shortTrace has 10 jobs with iterations of 10 to 50 ms arriving over 2.25 s.
func shortTrace() *workload.Trace {
	specs := []struct {
		iterMS float64
		iters  int
	}{{30, 40}, {20, 30}, {50, 10}, {10, 90}, {40, 20}, {25, 12}, {15, 46}, {35, 12}, {45, 22}, {20, 10}}
	t := &workload.Trace{Name: "short10"}
	for i, s := range specs {
		p := workload.Profile{Model: fmt.Sprintf("m%d", i), Batch: 1, Kind: workload.Train, IterS: s.iterMS / 1000,
			StartupS: 0.05, PersistentMiB: 100, EphemeralMiB: 200, Demand: 1}
		t.Jobs = append(t.Jobs, workload.Job{ID: fmt.Sprintf("j%d", i), Model: p.Model, Batch: 1, Iterations: s.iters,
			ArrivalS: 0.25 * float64(i), Kind: workload.Train, Profile: p})
	}
	return t
}

func order(r metrics.Result) string {
	ids := make([]string, len(r.Completion))
	for i, j := range r.Completion {
		ids[i] = j.ID
	}
	return strings.Join(ids, " ")
}

// overhead measures, from a live log, the mean time an iteration took beyond its
// GPU time: the round trip that gates it and this machine's scheduling noise.
type overhead struct {
	mu      sync.Mutex
	started map[string]float64
	extra   float64
	n       int
}

func (o *overhead) Emit(e eventlog.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch e.Kind {
	case eventlog.IterStart:
		o.started[e.Job] = e.T
	case eventlog.IterEnd:
		o.extra += e.T - o.started[e.Job] - e.GPU
		o.n++
	}
}

func (o *overhead) mean() float64 { return o.extra / float64(max(o.n, 1)) }

func simulate(t *testing.T, tr *workload.Trace, p core.Policy, dev sim.Device) metrics.Result {
	t.Helper()
	c := metrics.NewCollector()
	if err := sim.Run(tr, sim.Options{Policy: p, Device: dev, Sink: c}); err != nil {
		t.Fatal(err)
	}
	r, err := c.Result()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestLiveAgreesWithSimulator replays the short trace on the daemon with real worker
// processes under fifo, srtf and fair, and compares with the simulator: the same
// completion order, makespan and average JCT within 5 percent.
//
// The simulator's per-iteration overhead is calibrated with what the live run
// measured (as the device model intends): on a quiet machine it is a fraction of a
// millisecond and changes little, but on a shared two-core machine a neighbour's
// load stretches iterations by several percent, which is the machine, not the
// schedule. The uncalibrated figures are logged too.
func TestLiveAgreesWithSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for about 30 s")
	}
	tr := shortTrace()
	dev := sim.Device{Name: "test", TotalMiB: 16384, CapacityMiB: 14336}
	for _, name := range []string{"fifo", "srtf", "fair"} {
		t.Run(name, func(t *testing.T) {
			p, err := core.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			raw := simulate(t, tr, p, dev)
			// Every worker process starts before the first arrival and opens its
			// session at its arrival time: on two cores, starting a process while
			// another job runs would slow that job by milliseconds.
			var out bytes.Buffer
			ov := &overhead{started: map[string]float64{}}
			got, err := Run(context.Background(), tr, Options{Policy: p, CapacityMiB: dev.CapacityMiB,
				Exe: os.Args[0], Env: []string{workerEnv}, Output: &out, Prelaunch: 3 * time.Second, Log: ov})
			if err != nil {
				t.Fatalf("%v\nworkers said:\n%s", err, out.String())
			}
			// Calibrate: every iteration takes what it took live on average. (The
			// device's IterOverheadS would do, but the simulator adds it under
			// sharing modes only, and the daemon gates fifo's iterations too.)
			extra := ov.mean()
			cal := &workload.Trace{Name: tr.Name, Jobs: slices.Clone(tr.Jobs)}
			for i := range cal.Jobs {
				cal.Jobs[i].Profile.IterS += extra
			}
			want := simulate(t, cal, p, dev)
			t.Logf("%s: live makespan %.3f s, avg JCT %.3f s; sim %.3f s, %.3f s; sim calibrated with %.3f ms per iteration %.3f s, %.3f s",
				name, got.MakespanS, got.AvgJCTS, raw.MakespanS, raw.AvgJCTS, 1e3*extra, want.MakespanS, want.AvgJCTS)
			if extra > 0.005 {
				t.Errorf("the daemon added %.2f ms to every iteration on average; want well under 5 ms", 1e3*extra)
			}
			if got.Finished != len(tr.Jobs) {
				t.Fatalf("live run finished %d of %d jobs", got.Finished, len(tr.Jobs))
			}
			if o, w := order(got), order(raw); o != w {
				t.Errorf("completion order\nlive %s\nsim  %s", o, w)
			}
			for _, c := range []struct {
				what      string
				live, sim float64
			}{{"makespan", got.MakespanS, want.MakespanS}, {"average JCT", got.AvgJCTS, want.AvgJCTS}} {
				if d := math.Abs(c.live-c.sim) / c.sim; d > 0.05 {
					t.Errorf("%s: live %.3f s vs sim %.3f s (%.1f%% apart, want <= 5%%)", c.what, c.live, c.sim, 100*d)
				}
			}
		})
	}
}

// watch is an event sink that calls fn on each event.
type watch func(eventlog.Event)

func (w watch) Emit(e eventlog.Event) { w(e) }

// TestWorkerKilledMidIteration SIGKILLs a worker in the middle of an iteration: the
// daemon must return its memory within 5 s and every other job must finish.
func TestWorkerKilledMidIteration(t *testing.T) {
	tr := &workload.Trace{Name: "kill"}
	for i, iterS := range []float64{0.3, 0.01, 0.01} {
		p := workload.Profile{Model: "m", Batch: 1, Kind: workload.Train, IterS: iterS, PersistentMiB: 4000, EphemeralMiB: 4000, Demand: 1}
		tr.Jobs = append(tr.Jobs, workload.Job{ID: fmt.Sprintf("j%d", i), Model: "m", Batch: 1, Iterations: 20,
			ArrivalS: 0.05 * float64(i), Profile: p})
	}
	var (
		mu      sync.Mutex
		procs   = map[string]*os.Process{}
		killed  time.Time
		lostAt  time.Time
		freedAt time.Time
	)
	sink := watch(func(e eventlog.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case e.Kind == eventlog.IterStart && e.Job == "j0" && killed.IsZero():
			// j0's iteration runs for 300 ms: kill it now, mid-iteration.
			if p := procs["j0"]; p != nil {
				p.Signal(syscall.SIGKILL)
				killed = time.Now()
			}
		case e.Kind == eventlog.Lost && e.Job == "j0":
			lostAt = time.Now()
		case e.Kind == eventlog.Admit && e.Job != "j0" && !lostAt.IsZero() && freedAt.IsZero():
			freedAt = time.Now() // fifo: the next job gets j0's memory
		}
	})
	p, _ := core.Lookup("fifo")
	res, err := Run(context.Background(), tr, Options{Policy: p, CapacityMiB: 10000, Exe: os.Args[0], Env: []string{workerEnv},
		Log: sink, OnStart: func(job string, pr *os.Process) {
			mu.Lock()
			procs[job] = pr
			mu.Unlock()
		}})
	// The killed worker's exit is an error; nothing else may fail.
	if err == nil || !strings.Contains(err.Error(), "job j0") || strings.Contains(err.Error(), "job j1") || strings.Contains(err.Error(), "job j2") {
		t.Errorf("errors: %v", err)
	}
	if killed.IsZero() || lostAt.IsZero() || freedAt.IsZero() {
		t.Fatalf("killed %v, lost %v, memory reused %v", killed, lostAt, freedAt)
	}
	t.Logf("killed mid-iteration; lost after %v, memory reused after %v", lostAt.Sub(killed), freedAt.Sub(killed))
	if d := freedAt.Sub(killed); d > 5*time.Second {
		t.Errorf("memory came back %v after the kill, want < 5 s", d)
	}
	if res.Finished != 2 || res.Lost != 1 {
		t.Errorf("finished %d, lost %d; want 2 and 1", res.Finished, res.Lost)
	}
}
