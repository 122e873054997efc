package live

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
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
			ArrivalS: 0.25 * float64(i), Kind: workload.Train, Profile: &p})
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

// concurrency records, from a live log, the most lanes that ran an iteration at
// the same time.
type concurrency struct {
	mu      sync.Mutex
	running map[int]bool
	most    int
}

func (c *concurrency) Emit(e eventlog.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e.Kind {
	case eventlog.IterStart:
		c.running[e.Lane] = true
		c.most = max(c.most, len(c.running))
	case eventlog.IterEnd:
		delete(c.running, e.Lane)
	}
}

func simulate(t *testing.T, tr *workload.Trace, p core.Policy, dev device.Device) metrics.Result {
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

// calibrated returns the trace and device the simulator needs to account for lag,
// the per-iteration overhead the live daemon measured: under a scheduler that
// gates every iteration it is the device's IterOverheadS (the lane idles for it,
// as it does live while the end is processed late); the simulator adds none under
// fifo, where an iteration runs alone, so there it lengthens every iteration.
func calibrated(tr *workload.Trace, p core.Policy, dev device.Device, lag time.Duration) (*workload.Trace, device.Device) {
	if p.Mode == core.ModeSalus {
		dev.IterOverheadS = lag.Seconds()
		return tr, dev
	}
	cal := &workload.Trace{Name: tr.Name, Jobs: slices.Clone(tr.Jobs)}
	for i := range cal.Jobs {
		cal.Jobs[i] = cal.Jobs[i].WithProfile(func(p *workload.Profile) { p.IterS += lag.Seconds() })
	}
	return cal, dev
}

// heavyTrace has 6 compute-heavy jobs (demands 0.6 to 1) of iterations of 20 to
// 40 ms, arriving together in pairs, each job in its own lane under pack: up to six
// lanes run at once, and the device model slows each by the sum of the demands.
// Their lengths are far enough apart that the completion order is not a matter of
// a millisecond.
func heavyTrace() *workload.Trace {
	specs := []struct {
		iterMS, demand float64
		iters          int
		arrival        float64
	}{{20, 1, 40, 0}, {30, 0.8, 60, 0}, {40, 0.9, 15, 0.3}, {25, 0.6, 70, 0.3}, {35, 1, 30, 0.6}, {20, 0.7, 20, 0.6}}
	t := &workload.Trace{Name: "heavy6"}
	for i, s := range specs {
		p := workload.Profile{Model: fmt.Sprintf("h%d", i), Batch: 1, Kind: workload.Train, IterS: s.iterMS / 1000,
			StartupS: 0.05, PersistentMiB: 500, EphemeralMiB: 1000, Demand: s.demand}
		t.Jobs = append(t.Jobs, workload.Job{ID: fmt.Sprintf("h%d", i), Model: p.Model, Batch: 1, Iterations: s.iters,
			ArrivalS: s.arrival, Kind: workload.Train, Profile: &p})
	}
	return t
}

// TestLiveAgreesWithSimulator replays traces on the daemon, which emulates the
// device, with real worker processes, and compares with the simulator: the same
// completion order, makespan and average JCT within 5 percent. fifo, srtf and fair
// run the short trace (one lane at a time); pack runs compute-heavy jobs side by
// side in their own lanes, so that the device model's sharing decides the result
// (the test checks that at least three lanes ran iterations at once).
//
// The simulator's per-iteration overhead is calibrated with the lag the daemon
// measured: how much later than the device model it processed each iteration's
// end (its timer's latency on this machine). It is a fraction of a millisecond on
// a quiet machine; the uncalibrated figures are logged too.
func TestLiveAgreesWithSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes for about 30 s")
	}
	dev := device.Device{Name: "test", TotalMiB: 16384, CapacityMiB: 14336}
	for _, c := range []struct {
		policy string
		trace  *workload.Trace
		lanes  int // at least this many lanes must run at once
	}{{"fifo", shortTrace(), 1}, {"srtf", shortTrace(), 1}, {"fair", shortTrace(), 1}, {"pack", heavyTrace(), 3}} {
		t.Run(c.policy, func(t *testing.T) {
			tr := c.trace
			p, err := core.Lookup(c.policy)
			if err != nil {
				t.Fatal(err)
			}
			raw := simulate(t, tr, p, dev)
			// Every worker process starts before the first arrival and opens its
			// session at its arrival time: on two cores, starting a process while
			// another job runs would slow that job by milliseconds.
			var out bytes.Buffer
			conc := &concurrency{running: map[int]bool{}}
			got, err := RunLive(context.Background(), tr, Options{Policy: p, Device: dev,
				Exe: os.Args[0], Env: []string{workerEnv}, Output: &out, Prelaunch: 3 * time.Second, Log: conc})
			if err != nil {
				t.Fatalf("%v\nworkers said:\n%s", err, out.String())
			}
			lag := got.Emulation.MeanLag()
			ctr, cdev := calibrated(tr, p, dev, lag)
			want := simulate(t, ctr, p, cdev)
			t.Logf("%s on %s: live makespan %.3f s, avg JCT %.3f s; sim %.3f s, %.3f s; sim calibrated with %.3f ms per iteration (max %.3f ms) %.3f s, %.3f s; %d lanes at once",
				c.policy, tr.Name, got.MakespanS, got.AvgJCTS, raw.MakespanS, raw.AvgJCTS, 1e3*lag.Seconds(),
				1e3*got.Emulation.MaxLag.Seconds(), want.MakespanS, want.AvgJCTS, conc.most)
			if got.Finished != len(tr.Jobs) {
				t.Fatalf("live run finished %d of %d jobs", got.Finished, len(tr.Jobs))
			}
			if conc.most < c.lanes {
				t.Errorf("at most %d lanes ran iterations at once; want %d", conc.most, c.lanes)
			}
			if o, w := order(got.Result), order(raw); o != w {
				t.Errorf("completion order\nlive %s\nsim  %s", o, w)
			}
			for _, c := range []struct {
				what           string
				live, sim, raw float64
			}{{"makespan", got.MakespanS, want.MakespanS, raw.MakespanS}, {"average JCT", got.AvgJCTS, want.AvgJCTS, raw.AvgJCTS}} {
				if d, tol := math.Abs(c.live-c.sim)/c.sim, within(c.raw, c.sim); d > tol {
					t.Errorf("%s: live %.3f s vs sim %.3f s (%.1f%% apart, want <= %.1f%%)", c.what, c.live, c.sim, 100*d, 100*tol)
				}
			}
		})
	}
}

// within is how far a live figure may be from the calibrated simulator's: 5
// percent, plus the share of the figure that the calibration itself moved
// (|calibrated - raw| / raw). On a quiet machine the daemon's lateness is a
// fraction of a millisecond and the bound is 5 percent; on a loaded one the
// kernel wakes the daemon late by a varying amount (8 ms on average, 100 ms at
// worst, at a load of 25 on 2 cores), and the calibration, which adds the mean,
// corrects only the mean of it. What the daemon decides is checked apart from
// time: the completion order, the GPUs, the lanes at once.
func within(raw, calibrated float64) float64 {
	return 0.05 + math.Abs(calibrated-raw)/raw
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
			ArrivalS: 0.05 * float64(i), Profile: &p})
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

// mixedTrace is n jobs of measured training profiles drawn with seed, each
// running about 5, 15 or 45 s of iterations on the P100, arriving as a Poisson
// process with mean gap gapS. Only profiles whose iterations take at least 50 ms
// are drawn, so that the iterations stay well above the worker's round trip when
// the trace is shrunk by the time scale.
func mixedTrace(seed uint64, n int, gapS float64) *workload.Trace {
	rng := rand.New(rand.NewPCG(seed, 7))
	var ps []workload.Profile
	for _, p := range workload.Default().Measured() {
		if p.IterS >= 0.05 {
			ps = append(ps, p)
		}
	}
	lengths := []float64{5, 15, 45}
	t := &workload.Trace{Name: fmt.Sprintf("mixed%d-seed%d", n, seed), Seed: int64(seed)}
	now := 0.0
	for i := range n {
		if i > 0 {
			now += rng.ExpFloat64() * gapS
		}
		p := ps[rng.IntN(len(ps))]
		iters := max(1, int(math.Round(lengths[rng.IntN(len(lengths))]/p.IterS)))
		t.Jobs = append(t.Jobs, workload.Job{ID: fmt.Sprintf("job-%02d", i+1), Model: p.Model, Batch: p.Batch, Iterations: iters,
			ArrivalS: math.Round(now*1e3) / 1e3, Kind: workload.Train, Profile: &p})
	}
	return t
}

// TestPolicyRankingAgrees replays a 20-job trace of mixed models under fifo, srtf,
// pack and fair on the live engine and checks that the policies rank by average
// JCT as in the simulator. The trace (seed 2, a job every 5 s on average) was
// chosen, among seeds 1 to 12, for clear gaps in the simulator: srtf 80 s, pack
// 107 s, fair 147 s, fifo 348 s, each at least 30% apart, so the ranking does not
// hang on noise. At time scale 0.02 (the shortest iteration, overfeat's 50 ms,
// takes 1 ms live) the four runs take about 35 s.
func TestPolicyRankingAgrees(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 80 worker processes for about 35 s")
	}
	const scale = 0.02
	tr := mixedTrace(2, 20, 5)
	dev := device.DefaultDevice()
	type result struct {
		policy    string
		live, sim metrics.Result
	}
	var rs []result
	for _, name := range []string{"fifo", "srtf", "pack", "fair"} {
		p, err := core.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		l, err := RunLive(context.Background(), dev.Emulate(tr), Options{Policy: p, Device: dev, TimeScale: scale,
			Exe: os.Args[0], Env: []string{workerEnv}, Output: &out})
		if err != nil {
			t.Fatalf("%s: %v\nworkers said:\n%s", name, err, out.String())
		}
		if l.Finished != len(tr.Jobs) {
			t.Fatalf("%s: live run finished %d of %d jobs", name, l.Finished, len(tr.Jobs))
		}
		r := result{policy: name, live: Unscale(l.Result, scale), sim: simulate(t, tr, p, dev)}
		t.Logf("%s: avg JCT live %.1f s, sim %.1f s (%+.2f%%); makespan live %.1f s, sim %.1f s (%+.2f%%); lag %v per iteration",
			name, r.live.AvgJCTS, r.sim.AvgJCTS, 100*(r.live.AvgJCTS/r.sim.AvgJCTS-1),
			r.live.MakespanS, r.sim.MakespanS, 100*(r.live.MakespanS/r.sim.MakespanS-1), l.Emulation.MeanLag())
		rs = append(rs, r)
	}
	rank := func(jct func(result) float64) string {
		sorted := slices.Clone(rs)
		slices.SortStableFunc(sorted, func(a, b result) int { return cmp.Compare(jct(a), jct(b)) })
		names := make([]string, len(sorted))
		for i, r := range sorted {
			names[i] = r.policy
		}
		return strings.Join(names, " < ")
	}
	live, simulated := rank(func(r result) float64 { return r.live.AvgJCTS }), rank(func(r result) float64 { return r.sim.AvgJCTS })
	t.Logf("ranking by average JCT: live %s; sim %s", live, simulated)
	if live != simulated {
		t.Errorf("policies rank differently by average JCT\nlive %s\nsim  %s", live, simulated)
	}
}

// TestLiveInferenceServed checks that the live daemon logs each inference
// request's latency (a served event), as the simulator does.
func TestLiveInferenceServed(t *testing.T) {
	p := workload.Profile{Model: "m", Batch: 1, Kind: workload.Infer, IterS: 0.01, PersistentMiB: 100, EphemeralMiB: 100, Demand: 1}
	tr := &workload.Trace{Name: "infer", Jobs: []workload.Job{{ID: "i0", Model: "m", Batch: 1, Iterations: 5, Kind: workload.Infer, Profile: &p}}}
	pol, _ := core.Lookup("fair")
	res, err := Run(context.Background(), tr, Options{Policy: pol, CapacityMiB: 1000, Exe: os.Args[0], Env: []string{workerEnv}})
	if err != nil {
		t.Fatal(err)
	}
	l, ok := res.Latency["m"]
	if !ok || l.Requests != 5 {
		t.Fatalf("latency %+v: want 5 requests of model m", res.Latency)
	}
	if l.MeanS < 0.009 || l.MeanS > 1 {
		t.Errorf("mean latency %v s: want about the iteration time, 0.01 s", l.MeanS)
	}
}
