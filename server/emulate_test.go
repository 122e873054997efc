package server_test

import (
	"context"
	"errors"
	"math"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	salusv1 "github.com/salusgo/salus/api/salus/v1"
	"github.com/salusgo/salus/api/salus/v1/salusv1connect"
	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/server"
)

// emulating starts a daemon that emulates a device of the given speed.
func emulating(t *testing.T, policy string, speed float64, models func(string) (server.Model, bool)) *daemon {
	t.Helper()
	dev := device.Device{Name: "test-gpu", TotalMiB: 16384, CapacityMiB: 14000, Speed: speed}
	return start(t, policy, dev.CapacityMiB, func(c *server.Config) {
		c.Emulate = &dev
		c.Models = models
	})
}

func openEmulated(t *testing.T, d *daemon, o client.Options) *client.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := client.Open(ctx, d.addr, o)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Emulated {
		t.Fatalf("open reply of %s does not say emulated: %+v", o.Job, s.Admission)
	}
	return s
}

// iteration returns the k-th (from 0) iteration of job in the log: when it started
// and ended, and the GPU time logged.
func (m *memLog) iteration(t *testing.T, job string, k int) (start, end, gpu float64) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	starts, ends := 0, 0
	start, end = -1, -1
	for _, e := range m.ev {
		if e.Job != job {
			continue
		}
		switch e.Kind {
		case eventlog.IterStart:
			if starts == k {
				start = e.T
			}
			starts++
		case eventlog.IterEnd:
			if ends == k {
				end, gpu = e.T, e.GPU
			}
			ends++
		}
	}
	if start < 0 || end < 0 {
		t.Fatalf("no iteration %d of %s in the log", k, job)
	}
	return start, end, gpu
}

// near fails unless got is within [want-below, want+above]: the daemon's timer may
// fire late by a scheduling quantum of this (shared, two-core) machine, never early.
func near(t *testing.T, what string, got, want, below, above float64) {
	t.Helper()
	if got < want-below || got > want+above {
		t.Errorf("%s: %.1f ms, want %.1f ms (-%.1f/+%.1f)", what, 1e3*got, 1e3*want, 1e3*below, 1e3*above)
	}
}

// endConcurrently ends each session's running iteration from its own goroutine, as
// workers in separate processes would, and waits for every reply.
func endConcurrently(t *testing.T, ss ...*client.Session) {
	t.Helper()
	var wg sync.WaitGroup
	for _, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.End(0, 0); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

// TestEmulatedLanesShareCompute: two jobs in two lanes (pack), each iteration 100 ms
// of work at demand 0.8, run together: the demands sum to 1.6, so both iterations
// take about 160 ms, not 100 ms, although both clients end them at once.
func TestEmulatedLanesShareCompute(t *testing.T) {
	d := emulating(t, "pack", 1, nil)
	a := openEmulated(t, d, client.Options{Job: "a", PersistentMiB: 500, EphemeralMiB: 500, IterS: 0.1, Demand: 0.8})
	b := openEmulated(t, d, client.Options{Job: "b", PersistentMiB: 500, EphemeralMiB: 500, IterS: 0.1, Demand: 0.8})
	if a.Lane == b.Lane {
		t.Fatalf("both jobs in lane %d; the test needs two lanes", a.Lane)
	}
	t0 := time.Now()
	for _, s := range []*client.Session{a, b} {
		if err := s.Begin(); err != nil {
			t.Fatal(err)
		}
	}
	endConcurrently(t, a, b)
	wall := time.Since(t0)
	sa, ea, ga := d.log.iteration(t, "a", 0)
	sb, eb, gb := d.log.iteration(t, "b", 0)
	// What the model gives for starts a little apart: a alone for sb-sa, then both
	// at 1/1.6 of their speed until a's work is done, then b alone.
	lead := sb - sa
	wantA := sb + 1.6*(0.1-lead)
	wantB := wantA + lead
	t.Logf("a %.1f..%.1f ms, b %.1f..%.1f ms (wall %v); model: a ends at %.1f, b at %.1f",
		1e3*sa, 1e3*ea, 1e3*sb, 1e3*eb, wall, 1e3*wantA, 1e3*wantB)
	// A client the busy machine kept past the model's end ends its iteration
	// late, by its lag (at most MaxLag).
	st := d.EmulationStats()
	late := st.MaxLag.Seconds()
	near(t, "a's iteration", ea-sa, wantA-sa, 0.001, late+0.015)
	near(t, "b's iteration", eb-sb, wantB-sb, 0.001, late+0.015)
	near(t, "a's iteration, plainly", ea-sa, 0.160, 0.010, late+0.020)
	if ga != 0.1 || gb != 0.1 {
		t.Errorf("GPU time logged %v and %v; want the standalone work, 0.1 s", ga, gb)
	}
	if wall < 140*time.Millisecond {
		t.Errorf("the ends were answered after %v: the daemon did not hold them for the shared device", wall)
	}
	a.Close(true)
	b.Close(true)
	// Each end was held and processed at the model's instant, or came after it
	// and was counted as lag.
	if st := d.EmulationStats(); st.Iterations != 2 || st.Held+st.Lagged != 2 || (st.Lagged == 0) != (st.Lag == 0) {
		t.Errorf("emulation stats %+v", st)
	}
}

// TestEmulatedLoneJob: a job alone takes its work per iteration. Its work comes
// from the catalog model: 200 ms on the P100 on a device of speed 2 is 100 ms. An
// end with next is answered once the next iteration is granted, which, the request
// being there already, happens at the very instant the previous one ends.
func TestEmulatedLoneJob(t *testing.T) {
	models := func(name string) (server.Model, bool) {
		if name != "m" {
			return server.Model{}, false
		}
		return server.Model{PersistentMiB: 300, EphemeralMiB: 300, IterS: 0.2, Demand: 0.5}, true
	}
	d := emulating(t, "fair", 2, models)
	s := openEmulated(t, d, client.Options{Job: "solo", Model: "m"})
	t0 := time.Now()
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	if err := s.Next(0, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.End(0, 0); err != nil {
		t.Fatal(err)
	}
	wall := time.Since(t0)
	s.Close(true)
	s0, e0, g0 := d.log.iteration(t, "solo", 0)
	s1, e1, _ := d.log.iteration(t, "solo", 1)
	// An end the client sends after the model finished the work (a client the
	// busy machine kept waiting) ends the iteration when it comes, the
	// difference counted as lag: each iteration is its work, and together they
	// are their work plus the lag, whatever the machine's load.
	lag := d.EmulationStats().Lag.Seconds()
	near(t, "first iteration", e0-s0, 0.1, 0.0001, lag+0.015)
	near(t, "second iteration", e1-s1, 0.1, 0.0001, lag+0.015)
	near(t, "both iterations less the lag", e0-s0+e1-s1-lag, 0.2, 0.001, 0.001)
	if s1 != e0 {
		t.Errorf("the second iteration started %.3f ms after the first ended; want the same instant", 1e3*(s1-e0))
	}
	if g0 != 0.1 {
		t.Errorf("GPU time logged %v, want 0.1 s", g0)
	}
	if wall < 195*time.Millisecond {
		t.Errorf("two iterations answered after %v, want at least 200 ms", wall)
	}
}

// TestEmulatedLostSessionLeavesTheModel: a job whose client goes away while its
// end is held no longer takes a share of the device: the other job's iteration
// then takes about its own work, not the 160 ms of two jobs at demand 0.8.
func TestEmulatedLostSessionLeavesTheModel(t *testing.T) {
	d := emulating(t, "pack", 1, nil)
	a := openEmulated(t, d, client.Options{Job: "a", PersistentMiB: 500, EphemeralMiB: 500, IterS: 0.1, Demand: 0.8})
	b := openEmulated(t, d, client.Options{Job: "b", PersistentMiB: 500, EphemeralMiB: 500, IterS: 0.1, Demand: 0.8})
	if err := a.Begin(); err != nil {
		t.Fatal(err)
	}
	if err := b.Begin(); err != nil {
		t.Fatal(err)
	}
	held := make(chan error, 1)
	go func() { held <- a.End(0, 0) }()
	time.Sleep(5 * time.Millisecond)
	a.Abort() // killed while its end waits for the device
	if err := b.End(0, 0); err != nil {
		t.Fatal(err)
	}
	if err := <-held; err == nil {
		t.Error("a's held end was answered as if its iteration ended")
	}
	sb, eb, _ := d.log.iteration(t, "b", 0)
	lost, ok := d.log.find(eventlog.Lost, "a")
	if !ok {
		t.Fatal("a was not lost")
	}
	// b shares the device with a until a is lost, then runs alone.
	shared := lost.T - sb
	want := shared + (0.1 - shared/1.6)
	t.Logf("a lost %.1f ms after b started; b's iteration %.1f ms, model %.1f ms", 1e3*shared, 1e3*(eb-sb), 1e3*want)
	near(t, "b's iteration", eb-sb, want, 0.001, 0.015)
	if eb-sb > 0.13 {
		t.Errorf("b's iteration took %.1f ms: a's work stayed on the device", 1e3*(eb-sb))
	}
	if _, ok := d.log.find(eventlog.IterEnd, "a"); ok {
		t.Error("a's iteration was logged as ended")
	}
	b.Close(true)
}

// TestEmulationRefusesOpenWithoutWork: under emulation an open must say what its
// iterations cost, or name a catalog model that does.
func TestEmulationRefusesOpenWithoutWork(t *testing.T) {
	d := emulating(t, "pack", 1, func(string) (server.Model, bool) { return server.Model{}, false })
	for _, c := range []struct {
		o          client.Options
		code, says string
	}{
		{client.Options{Job: "bare", PersistentMiB: 10, EphemeralMiB: 10}, "rejected", "no iter_s and demand: send iter_s"},
		{client.Options{Job: "label", Model: "nosuch", PersistentMiB: 10, EphemeralMiB: 10}, "rejected", "no iter_s and demand"},
		{client.Options{Job: "unknown", Model: "nosuch"}, "rejected", `unknown model "nosuch"`},
		{client.Options{Job: "time-only", PersistentMiB: 10, EphemeralMiB: 10, IterS: 0.01}, "rejected", "gave no demand"},
		{client.Options{Job: "demand-only", PersistentMiB: 10, EphemeralMiB: 10, Demand: 0.5}, "rejected", "gave no iter_s"},
		{client.Options{Job: "greedy", PersistentMiB: 10, EphemeralMiB: 10, IterS: 0.01, Demand: 1.5}, "bad_request", "demand is 1.5"},
		{client.Options{Job: "negative", PersistentMiB: 10, EphemeralMiB: 10, IterS: -1, Demand: 0.5}, "bad_request", "iter_s"},
	} {
		_, err := client.Open(context.Background(), d.addr, c.o)
		var e *client.Error
		if !errors.As(err, &e) || e.Code != c.code || !strings.Contains(e.Msg, c.says) {
			t.Errorf("open %s: %v; want code %s saying %q", c.o.Job, err, c.code, c.says)
		}
	}
	if st := d.Stats(); st.Sessions != 0 {
		t.Errorf("refused opens left %d sessions", st.Sessions)
	}
	// Without emulation the same fields are accepted and ignored.
	plain := start(t, "pack", 1000, nil)
	s, err := client.Open(context.Background(), plain.addr, client.Options{Job: "x", PersistentMiB: 10, EphemeralMiB: 10, IterS: 0.01, Demand: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if s.Emulated {
		t.Error("a daemon that emulates nothing says emulated")
	}
	s.Close(true)
}

// TestEmulatedShortIterationsFollowTheClient: iterations shorter than the client's
// round trip end when the client's end arrives, not before; each takes at least
// its work, and the lag is measured (the event log shows it, as the simulator's
// per-iteration overhead would).
func TestEmulatedShortIterationsFollowTheClient(t *testing.T) {
	d := emulating(t, "pack", 1, nil)
	s := openEmulated(t, d, client.Options{Job: "tiny", PersistentMiB: 10, EphemeralMiB: 10, IterS: 1e-6, Demand: 1})
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		if err := s.Next(0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.End(0, 0); err != nil {
		t.Fatal(err)
	}
	s.Close(true)
	st := d.EmulationStats()
	if st.Iterations != 51 || st.Lagged != 51 || st.Held != 0 || st.MeanLag() <= 0 || st.MaxLag < st.MeanLag() {
		t.Errorf("stats %+v", st)
	}
	for k := range 51 {
		s, e, g := d.log.iteration(t, "tiny", k)
		if e-s < 1e-6-1e-9 || math.Abs(g-1e-6) > 1e-12 {
			t.Fatalf("iteration %d: %.3f µs, GPU %v", k, 1e6*(e-s), g)
		}
	}
	t.Logf("mean lag %v, max %v (the client's round trip, in this process)", st.MeanLag(), st.MaxLag)
}

// TestEmulatedConnectAPI: over the connect API, the open says emulated and
// EndIteration returns once the device model has done the iteration's work.
func TestEmulatedConnectAPI(t *testing.T) {
	d := emulating(t, "pack", 1, nil)
	hs := httptest.NewUnstartedServer(d.Handler())
	hs.EnableHTTP2 = true
	hs.Start()
	defer hs.Close()
	ctx := context.Background()
	sc := salusv1connect.NewSchedulerServiceClient(hs.Client(), hs.URL)
	if _, err := sc.OpenSession(ctx, connect.NewRequest(&salusv1.OpenSessionRequest{Job: "bare", PersistentMib: 10, EphemeralMib: 10})); connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Errorf("open without iter_s and demand: %v", err)
	}
	op, err := sc.OpenSession(ctx, connect.NewRequest(&salusv1.OpenSessionRequest{Job: "c", PersistentMib: 10, EphemeralMib: 10, IterS: 0.05, Demand: 1}))
	if err != nil {
		t.Fatal(err)
	}
	if !op.Msg.Emulated {
		t.Error("open reply does not say emulated")
	}
	sid, sec := op.Msg.Session, op.Msg.Secret
	// The work starts when the begin is granted, before its reply arrives: time
	// both calls.
	t0 := time.Now()
	if _, err := sc.BeginIteration(ctx, connect.NewRequest(&salusv1.BeginIterationRequest{Session: sid, Secret: sec})); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.EndIteration(ctx, connect.NewRequest(&salusv1.EndIterationRequest{Session: sid, Secret: sec})); err != nil {
		t.Fatal(err)
	}
	if wall := time.Since(t0); wall < 45*time.Millisecond {
		t.Errorf("BeginIteration and EndIteration returned after %v, before the 50 ms of work were done", wall)
	}
	s, e, _ := d.log.iteration(t, "c", 0)
	near(t, "iteration", e-s, 0.05, 0.0001, 0.015)
	if _, err := sc.CloseSession(ctx, connect.NewRequest(&salusv1.CloseSessionRequest{Session: sid, Secret: sec})); err != nil {
		t.Fatal(err)
	}
}

// TestEmulatedArriveGivesTheTimeAlone: a training job that says its iterations gets
// alone_s on its arrive event (start-up + iterations x its emulated iteration); a
// job that does not, or an inference job (its pauses are the client's), gets none.
func TestEmulatedArriveGivesTheTimeAlone(t *testing.T) {
	d := emulating(t, "pack", 2, nil)
	for _, o := range []client.Options{
		{Job: "train", PersistentMiB: 10, EphemeralMiB: 10, IterS: 0.25, Demand: 0.5, Iterations: 40, StartupS: 3},
		{Job: "no-count", PersistentMiB: 10, EphemeralMiB: 10, IterS: 0.25, Demand: 0.5},
		{Job: "infer", Kind: "infer", PersistentMiB: 10, EphemeralMiB: 10, IterS: 0.25, Demand: 0.5, Iterations: 40},
	} {
		openEmulated(t, d, o)
	}
	alone := map[string]float64{}
	d.log.mu.Lock()
	for _, e := range d.log.ev {
		if e.Kind == eventlog.Arrive {
			alone[e.Job] = e.AloneS
		}
	}
	d.log.mu.Unlock()
	// The client's iter_s is the emulated device's own: 3 + 40 x 0.25.
	if alone["train"] != 13 || alone["no-count"] != 0 || alone["infer"] != 0 {
		t.Errorf("alone_s per job %v, want train 13 and the others none", alone)
	}
}
