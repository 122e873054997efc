package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	salusv1 "github.com/salusgo/salus/api/salus/v1"
	"github.com/salusgo/salus/api/salus/v1/salusv1connect"
	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/protocol"
	"github.com/salusgo/salus/server"
)

// twoGPUs is a node of two GPUs of 14000 MiB with physical indices 2 and 5 (so
// that the tests tell a physical index from the core's), placed by placement.
func twoGPUs(placement string) func(*server.Config) {
	return func(c *server.Config) {
		c.GPUs = []server.GPU{{Index: 2}, {Index: 5, CapacityMiB: 14000}}
		if placement != "" {
			gp, err := core.LookupGPUPlacement(placement)
			if err != nil {
				panic(err)
			}
			c.GPUPlacement = gp
		}
	}
}

func (m *memLog) admit(t *testing.T, job string) eventlog.Event {
	t.Helper()
	e, ok := m.find(eventlog.Admit, job)
	if !ok {
		t.Fatalf("no admit event of %s", job)
	}
	return e
}

// TestTwoGPUsLeastLoaded: two jobs that open at once land on different GPUs, and
// the open reply names each one's GPU by its physical index; the event log says
// the node's GPU (its index in the node) and the run header the GPU count.
func TestTwoGPUsLeastLoaded(t *testing.T) {
	d := start(t, "pack", 14000, twoGPUs(""))
	type res struct {
		s   *client.Session
		err error
	}
	ch := make(chan res, 2)
	for _, job := range []string{"a", "b"} {
		go func() {
			s, err := client.Open(context.Background(), d.addr, client.Options{Job: job, PersistentMiB: 500, EphemeralMiB: 1000, DeclaredS: 1})
			ch <- res{s, err}
		}()
	}
	var got []int
	for range 2 {
		r := <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		defer r.s.Close(true)
		if len(r.s.GPUs) != 1 {
			t.Fatalf("%s: open reply names GPUs %v, want one", r.s.Session, r.s.GPUs)
		}
		got = append(got, r.s.GPUs[0])
		node := d.log.admit(t, r.s.Session).GPUIndex
		if want := map[int]int{2: 0, 5: 1}[r.s.GPUs[0]]; node != want {
			t.Errorf("%s on GPU %d: the admit event says node GPU %d, want %d", r.s.Session, r.s.GPUs[0], node, want)
		}
		if r.s.VisibleDevices() != map[int]string{2: "2", 5: "5"}[r.s.GPUs[0]] {
			t.Errorf("%s: VisibleDevices %q", r.s.Session, r.s.VisibleDevices())
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, []int{2, 5}) {
		t.Errorf("jobs on GPUs %v; least-loaded should spread them over 2 and 5", got)
	}
	d.log.mu.Lock()
	run := d.log.ev[0]
	d.log.mu.Unlock()
	if run.Kind != eventlog.Run || run.GPUs != 2 || run.CapacityMiB != 14000 {
		t.Errorf("run header %+v: want 2 GPUs of 14000 MiB", run)
	}
}

// TestFirstFitFillsGPU0: under first-fit, two jobs that fit both go to GPU 0.
func TestFirstFitFillsGPU0(t *testing.T) {
	d := start(t, "pack", 14000, twoGPUs("first-fit"))
	a := open(t, d, "a", 500, 1000, 1)
	defer a.Close(true)
	b := open(t, d, "b", 500, 1000, 1)
	defer b.Close(true)
	if !slices.Equal(a.GPUs, []int{2}) || !slices.Equal(b.GPUs, []int{2}) {
		t.Errorf("first-fit put the jobs on GPUs %v and %v, want both on 2 (node GPU 0)", a.GPUs, b.GPUs)
	}
}

// TestGangOpen: a job that needs 2 GPUs gets both of a 2-GPU daemon, as one
// session on one lane; one that needs 3 is refused, saying why.
func TestGangOpen(t *testing.T) {
	d := start(t, "pack", 14000, twoGPUs(""))
	ctx := context.Background()
	g, err := client.Open(ctx, d.addr, client.Options{Job: "g", PersistentMiB: 500, EphemeralMiB: 1000, DeclaredS: 1, GPUs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.GPUs, []int{2, 5}) || g.VisibleDevices() != "2,5" {
		t.Fatalf("gang of 2 given GPUs %v (%q), want [2 5]", g.GPUs, g.VisibleDevices())
	}
	if e := d.log.admit(t, "g"); !slices.Equal(e.Gang, []int{0, 1}) {
		t.Errorf("admit event of the gang: gang %v, want [0 1]", e.Gang)
	}
	if e, _ := d.log.find(eventlog.Arrive, "g"); e.GPUs != 2 {
		t.Errorf("arrive event of the gang: gpus %d, want 2", e.GPUs)
	}
	if err := g.Begin(); err != nil {
		t.Fatal(err)
	}
	if err := g.End(time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(true); err != nil {
		t.Fatal(err)
	}

	_, err = client.Open(ctx, d.addr, client.Options{Job: "big", PersistentMiB: 500, EphemeralMiB: 1000, DeclaredS: 1, GPUs: 3})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Code != protocol.CodeRejected || !strings.Contains(ce.Msg, "needs 3 GPUs") || !strings.Contains(ce.Msg, "has 2") {
		t.Errorf("gang of 3 on 2 GPUs: %v; want rejected, saying it needs 3 and the daemon has 2", err)
	}
	_, err = client.Open(ctx, d.addr, client.Options{Job: "neg", PersistentMiB: 500, EphemeralMiB: 1000, DeclaredS: 1, GPUs: -1})
	if !errors.As(err, &ce) || ce.Code != protocol.CodeBadRequest {
		t.Errorf("gpus -1: %v; want bad_request", err)
	}
}

// TestGPUsOverConnectAndAdmin: the connect API's open names the GPUs; the lanes,
// sessions and /metrics show each lane's GPU and each GPU's free memory.
func TestGPUsOverConnectAndAdmin(t *testing.T) {
	d := start(t, "pack", 14000, func(c *server.Config) { withTokens(c); twoGPUs("")(c) })
	hs := httptest.NewServer(d.Handler())
	defer hs.Close()
	ctx := context.Background()
	sc := salusv1connect.NewSchedulerServiceClient(hs.Client(), hs.URL, bearer(userToken))
	op, err := sc.OpenSession(ctx, connect.NewRequest(&salusv1.OpenSessionRequest{Job: "g", PersistentMib: 100, EphemeralMib: 100, DeclaredS: 1, Gpus: 2}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(op.Msg.Gpus, []int32{2, 5}) {
		t.Errorf("connect open of a gang: gpus %v, want [2 5]", op.Msg.Gpus)
	}
	one := open(t, d, "one", 100, 100, 1)
	defer one.Close(true)
	if _, err := sc.OpenSession(ctx, connect.NewRequest(&salusv1.OpenSessionRequest{Job: "x", PersistentMib: 100, EphemeralMib: 100, DeclaredS: 1, Gpus: 3})); connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Errorf("connect open of a gang of 3: %v", err)
	}
	ac := salusv1connect.NewAdminServiceClient(hs.Client(), hs.URL, bearer(adminToken))
	ln, err := ac.ListLanes(ctx, connect.NewRequest(&salusv1.ListLanesRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(ln.Msg.Gpus) != 2 || ln.Msg.Gpus[0].Index != 2 || ln.Msg.Gpus[1].Index != 5 || ln.Msg.Gpus[0].CapacityMib != 14000 {
		t.Fatalf("ListLanes GPUs %v", ln.Msg.Gpus)
	}
	gang := false
	for _, l := range ln.Msg.Lanes {
		gang = gang || slices.Equal(l.Gpus, []int32{2, 5})
	}
	if !gang || len(ln.Msg.Lanes) != 2 {
		t.Errorf("lanes %v: want the gang's lane on [2 5] and one more", ln.Msg.Lanes)
	}
	ss, err := ac.ListSessions(ctx, connect.NewRequest(&salusv1.ListSessionsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss.Msg.Sessions {
		if want := map[string]int{"g": 2, "one": 1}[s.Job]; len(s.Gpus) != want {
			t.Errorf("session %s: gpus %v, want %d", s.Job, s.Gpus, want)
		}
	}
	pol, err := ac.GetPolicy(ctx, connect.NewRequest(&salusv1.GetPolicyRequest{}))
	if err != nil || pol.Msg.Gpus != 2 || pol.Msg.GpuPlacement != "least-loaded" {
		t.Errorf("policy %v %v", pol, err)
	}
	resp, err := http.Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{`salus_gpu_capacity_mib{gpu="5"} 14000`, `salus_gpu_free_memory_mib{gpu="2"}`, `salus_lane_memory_mib{gpu="2,5",kind="size",lane=`} {
		if !strings.Contains(string(body), m) {
			t.Errorf("/metrics lacks %q:\n%s", m, grep(string(body), "salus_gpu", "salus_lane_memory"))
		}
	}
}

// TestNodeConfigRefused: GPUs given twice, or without memory, are refused.
func TestNodeConfigRefused(t *testing.T) {
	p, _ := core.Lookup("pack")
	for _, tc := range []struct {
		gpus []server.GPU
		want string
	}{
		{[]server.GPU{{Index: 0}, {Index: 0}}, "given twice"},
		{[]server.GPU{{Index: -1}}, "between 0 and"},
		{[]server.GPU{{Index: 1, CapacityMiB: -5}}, "positive number"},
	} {
		_, err := server.New(server.Config{Policy: p, CapacityMiB: 1000, GPUs: tc.gpus})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("GPUs %v: %v; want an error saying %q", tc.gpus, err, tc.want)
		}
	}
}

// emulatingNode starts a daemon that emulates two GPUs.
func emulatingNode(t *testing.T) *daemon {
	t.Helper()
	dev := device.Device{Name: "test-gpu", TotalMiB: 16384, CapacityMiB: 14000, Speed: 1}
	return start(t, "pack", dev.CapacityMiB, func(c *server.Config) {
		c.Emulate = &dev
		c.GPUs = []server.GPU{{Index: 0}, {Index: 1}}
	})
}

// TestEmulatedGPUsDoNotShare: on an emulated node of two GPUs, two jobs on
// different GPUs each run at full speed (on one GPU, at demand 0.8 each, they
// would take 160 ms).
func TestEmulatedGPUsDoNotShare(t *testing.T) {
	d := emulatingNode(t)
	a := openEmulated(t, d, client.Options{Job: "a", PersistentMiB: 500, EphemeralMiB: 500, IterS: 0.1, Demand: 0.8})
	b := openEmulated(t, d, client.Options{Job: "b", PersistentMiB: 500, EphemeralMiB: 500, IterS: 0.1, Demand: 0.8})
	if slices.Equal(a.GPUs, b.GPUs) {
		t.Fatalf("both jobs on GPU %v; the test needs two", a.GPUs)
	}
	for _, s := range []*client.Session{a, b} {
		if err := s.Begin(); err != nil {
			t.Fatal(err)
		}
	}
	endConcurrently(t, a, b)
	for _, job := range []string{"a", "b"} {
		s, e, g := d.log.iteration(t, job, 0)
		near(t, job+"'s iteration", e-s, 0.1, 1e-6, 1e-6) // the model's instants: exact
		if g != 0.1 {
			t.Errorf("%s: GPU time %v, want 0.1", job, g)
		}
	}
	a.Close(true)
	b.Close(true)
}

// TestEmulatedGang: a gang job's iteration is a part on each of its GPUs and ends
// with the last: beside a job on one of its GPUs it is slowed as that part is.
func TestEmulatedGang(t *testing.T) {
	d := emulatingNode(t)
	g := openEmulated(t, d, client.Options{Job: "g", PersistentMiB: 500, EphemeralMiB: 500, IterS: 0.1, Demand: 0.8, GPUs: 2})
	if !slices.Equal(g.GPUs, []int{0, 1}) {
		t.Fatalf("gang given GPUs %v", g.GPUs)
	}
	// Alone, the gang's iteration takes its work.
	if err := g.Begin(); err != nil {
		t.Fatal(err)
	}
	endConcurrently(t, g)
	s, e, _ := d.log.iteration(t, "g", 0)
	near(t, "the gang's lone iteration", e-s, 0.1, 1e-6, 1e-6)

	c := openEmulated(t, d, client.Options{Job: "c", PersistentMiB: 500, EphemeralMiB: 500, IterS: 0.1, Demand: 0.8})
	if err := c.Begin(); err != nil {
		t.Fatal(err)
	}
	if err := g.Begin(); err != nil {
		t.Fatal(err)
	}
	endConcurrently(t, c, g)
	sc, ec, _ := d.log.iteration(t, "c", 0)
	sg, eg, gg := d.log.iteration(t, "g", 1)
	// c alone for the lead, then c and the gang's part on c's GPU at 1/1.6 of
	// their speed until c's work is done, then that part alone: the gang ends
	// with it, its other part having ended long before.
	lead := sg - sc
	wantC := sg + 1.6*(0.1-lead)
	wantG := wantC + lead
	near(t, "c's iteration", ec-sc, wantC-sc, 1e-6, 1e-6)
	near(t, "the gang's shared iteration", eg-sg, wantG-sg, 1e-6, 1e-6)
	if gg != 0.1 {
		t.Errorf("gang GPU time %v, want its standalone work 0.1", gg)
	}
	c.Close(true)
	g.Close(true)
}

// TestRecoveredGangKeepsItsGPUs: a gang job rebuilt from the journal after a
// restart still needs all its GPUs, and its resume's reply names them.
func TestRecoveredGangKeepsItsGPUs(t *testing.T) {
	j := server.NewJournal()
	j.Emit(eventlog.Event{Kind: eventlog.Run, Policy: "pack", Engine: "live", CapacityMiB: 14000, GPUs: 2})
	j.Emit(eventlog.Event{T: 1, Kind: eventlog.Arrive, Job: "g", JobKind: "train", PersistentMiB: 100, EphemeralMiB: 100, GPUs: 2, ResumeSHA256: sha256Hex(testResumeToken)})
	d := start(t, "pack", 14000, func(c *server.Config) {
		twoGPUs("")(c)
		c.Recover, c.RecoverWindow = j, time.Minute
	})
	g, err := client.Open(context.Background(), d.addr, client.Options{Job: "g", PersistentMiB: 100, EphemeralMiB: 100, Resume: true, ResumeToken: testResumeToken})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(true)
	if !g.Resumed || !slices.Equal(g.GPUs, []int{2, 5}) {
		t.Errorf("resumed gang: resumed %v, GPUs %v; want both GPUs, [2 5]", g.Resumed, g.GPUs)
	}
}

// TestGangBoundsOnTheWire: the fast path refuses gpus it cannot hold, below
// zero, or beyond the node, with the code the protocol gives.
func TestGangBoundsOnTheWire(t *testing.T) {
	d := start(t, "pack", 14000, twoGPUs(""))
	for gpus, code := range map[string]string{"-1": "bad_request", "1e302": "bad_request", "2.5": "bad_request", "3": "rejected", "4294967297": "rejected"} {
		c := rawConn(t, d)
		rep := c.call(`{"op":"open","id":1,"version":1,"job":"j","persistent_mib":10,"ephemeral_mib":10,"gpus":` + gpus + `}`)
		if rep["ok"] != false || rep["code"] != code {
			t.Errorf("gpus %s: %v; want code %s", gpus, rep, code)
		}
	}
	c := rawConn(t, d)
	if rep := c.call(`{"op":"open","id":1,"version":1,"job":"j","persistent_mib":10,"ephemeral_mib":10,"gpus":2}`); rep["ok"] != true || len(rep["gpus"].([]any)) != 2 {
		t.Errorf("gpus 2: %v", rep)
	}
}
