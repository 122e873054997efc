package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"net/http/httptest"
	"os"
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
	"github.com/salusgo/salus/protocol"
	"github.com/salusgo/salus/server"
)

// syncBuffer is a log sink the daemon writes from its goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestClaimIntentBindsItsSession: a claim reserved (over the admin API, as the
// DRA driver does) with declared 3600 s and priority 1 binds the session that
// opens under it: its client sends declared 2.5 s and no priority, and the
// session runs with 3600 s and 1, as the event log's arrive event and the
// daemon's log (declared_from=claim) say. Under srtf a claim that declares a
// time lets its client declare none.
func TestClaimIntentBindsItsSession(t *testing.T) {
	var logs syncBuffer
	d := start(t, "srtf", 14000, func(c *server.Config) {
		withTokens(c)
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	hs := httptest.NewServer(d.Handler())
	defer hs.Close()
	ctx := context.Background()
	ac := salusv1connect.NewAdminServiceClient(hs.Client(), hs.URL, bearer(adminToken))
	one := int32(1)
	r, err := ac.ReserveClaim(ctx, connect.NewRequest(&salusv1.ReserveClaimRequest{Claim: "uid-intent", Name: "ns/intent", MemoryMib: 3500,
		Secret: secretA, DeclaredS: 3600, Priority: &one}))
	if err != nil {
		t.Fatal(err)
	}
	if r.Msg.Share != 0.25 {
		t.Errorf("the claim's share is %v, want its share of the GPU's memory, 3500/14000 = 0.25", r.Msg.Share)
	}
	s, err := client.Open(ctx, d.addr, client.Options{Job: "bound", PersistentMiB: 500, EphemeralMiB: 500, DeclaredS: 2.5, Claim: "uid-intent", ClaimSecret: secretA})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(true)
	e, ok := d.log.find(eventlog.Arrive, "bound")
	if !ok || e.DeclaredS != 3600 || e.Priority != 1 {
		t.Errorf("arrive event %+v: want declared_s 3600 and priority 1, the claim's", e)
	}
	if ss := d.Sessions(); len(ss) != 1 || ss[0].DeclaredS != 3600 {
		t.Errorf("sessions %v: want declared 3600 s", ss)
	}
	for _, want := range []string{"declared_from=claim", "priority_from=claim", "declared_s=3600", "priority=1", "share=0.25"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the daemon's log does not say %s:\n%s", want, logs.String())
		}
	}

	// A claim declaring a time lets srtf take a client that declares none.
	if _, err := ac.ReserveClaim(ctx, connect.NewRequest(&salusv1.ReserveClaimRequest{Claim: "uid-t", Name: "ns/t", MemoryMib: 3500, Secret: secretB, DeclaredS: 60})); err != nil {
		t.Fatal(err)
	}
	n, err := client.Open(ctx, d.addr, client.Options{Job: "nodecl", PersistentMiB: 500, EphemeralMiB: 500, Claim: "uid-t", ClaimSecret: secretB})
	if err != nil {
		t.Fatalf("srtf, a claim declaring 60 s, a client declaring none: %v", err)
	}
	defer n.Close(true)
	// Without a claim's time, srtf still refuses it.
	if _, err := ac.ReserveClaim(ctx, connect.NewRequest(&salusv1.ReserveClaimRequest{Claim: "uid-none", Name: "ns/none", MemoryMib: 3500, Secret: secretA})); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Open(ctx, d.addr, client.Options{Job: "none", PersistentMiB: 500, EphemeralMiB: 500, Claim: "uid-none", ClaimSecret: secretA}); err == nil || !strings.Contains(err.Error(), "declared none") {
		t.Errorf("srtf, neither the claim nor the client declaring a time: %v, want refused", err)
	}
}

// TestReserveClaimIntentChecks: an intent out of bounds is refused naming the
// field; reserving a claim again with another intent is refused, with the same
// one is the kubelet's retry.
func TestReserveClaimIntentChecks(t *testing.T) {
	d := start(t, "wfair", 14000, nil)
	two := 2
	for _, c := range []struct {
		in   server.ClaimIntent
		want string
	}{
		{server.ClaimIntent{Share: 5000}, "field share is 5000"},
		{server.ClaimIntent{Share: math.NaN()}, "field share"},
		{server.ClaimIntent{DeclaredS: -1}, "field declared_s"},
	} {
		if _, err := d.Reserve(server.ClaimSpec{UID: "uid-x", Name: "ns/x", MemoryMiB: 100, Intent: c.in}); server.CodeOf(err) != protocol.CodeBadRequest || !strings.Contains(err.Error(), c.want) {
			t.Errorf("reserve with %+v: %v, want bad_request with %q", c.in, err, c.want)
		}
	}
	in := server.ClaimIntent{DeclaredS: 10, Priority: &two, Share: 3}
	if r, err := d.Reserve(server.ClaimSpec{UID: "uid-y", Name: "ns/y", MemoryMiB: 100, Secret: secretA, Intent: in}); err != nil || r.Share != 3 {
		t.Fatalf("reserve = %+v, %v; want share 3", r, err)
	}
	same := in
	p := 2
	same.Priority = &p
	if r, err := d.Reserve(server.ClaimSpec{UID: "uid-y", Name: "ns/y", MemoryMiB: 100, Secret: secretA, Intent: same}); err != nil || !r.Existed {
		t.Errorf("the same intent again: %+v, %v; want existed", r, err)
	}
	if _, err := d.Reserve(server.ClaimSpec{UID: "uid-y", Name: "ns/y", MemoryMiB: 100, Secret: secretA, Intent: server.ClaimIntent{DeclaredS: 10}}); server.CodeOf(err) != protocol.CodeRejected || !strings.Contains(err.Error(), "intent declared 10 s, priority 2, share 3") {
		t.Errorf("another intent: %v, want rejected naming the one reserved", err)
	}
}

// TestListClaims: every reserved claim is listed (GPU, memory, intent, share,
// the session open under it), over the admin API too, and each GPU's lanes
// listing shows the memory its claims reserve.
func TestListClaims(t *testing.T) {
	d := start(t, "pack", 14000, func(c *server.Config) { withTokens(c); twoGPUs("")(c) })
	one := 1
	if _, err := d.Reserve(server.ClaimSpec{UID: "uid-b", Name: "ns/b", GPU: 5, MemoryMiB: 7000, Secret: secretB, Intent: server.ClaimIntent{DeclaredS: 3600, Priority: &one}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Reserve(server.ClaimSpec{UID: "uid-a", Name: "ns/a", GPU: 2, MemoryMiB: 3500, Secret: secretA, Intent: server.ClaimIntent{Share: 2}}); err != nil {
		t.Fatal(err)
	}
	s, err := client.Open(context.Background(), d.addr, client.Options{Job: "job-b", PersistentMiB: 500, EphemeralMiB: 500, DeclaredS: 1, Claim: "uid-b", ClaimSecret: secretB})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(true)
	got := d.ListClaims()
	if len(got) != 2 || got[0].UID != "uid-a" || got[0].GPU != 2 || got[0].Share != 2 || got[0].Session != "" ||
		got[1].UID != "uid-b" || got[1].GPU != 5 || got[1].MemoryMiB != 7000 || got[1].Share != 0.5 || got[1].Intent.DeclaredS != 3600 ||
		*got[1].Intent.Priority != 1 || got[1].Session != "job-b" {
		t.Fatalf("claims %+v", got)
	}
	hs := httptest.NewServer(d.Handler())
	defer hs.Close()
	ctx := context.Background()
	ac := salusv1connect.NewAdminServiceClient(hs.Client(), hs.URL, bearer(adminToken))
	lc, err := ac.ListClaims(ctx, connect.NewRequest(&salusv1.ListClaimsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if c := lc.Msg.Claims; len(c) != 2 || c[0].Priority != nil || c[1].Priority == nil || *c[1].Priority != 1 || c[1].Session != "job-b" || c[1].Gpu != 5 {
		t.Errorf("ListClaims %v", c)
	}
	ln, err := ac.ListLanes(ctx, connect.NewRequest(&salusv1.ListLanesRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if g := ln.Msg.Gpus; len(g) != 2 || g[0].ClaimedMib != 3500 || g[1].ClaimedMib != 7000 {
		t.Errorf("ListLanes GPUs %v: want 3500 and 7000 MiB reserved by claims", g)
	}
	// A user's token may not list the claims.
	uc := salusv1connect.NewAdminServiceClient(hs.Client(), hs.URL, bearer(userToken))
	if _, err := uc.ListClaims(ctx, connect.NewRequest(&salusv1.ListClaimsRequest{})); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("ListClaims with a user's token: %v, want permission_denied", err)
	}
}

// emulatedP100 starts a daemon that emulates a P100 under policy.
func emulatedP100(t *testing.T, policy string, mod func(*server.Config)) *daemon {
	t.Helper()
	dev, err := device.Preset("p100")
	if err != nil {
		t.Fatal(err)
	}
	return start(t, policy, dev.CapacityMiB, func(c *server.Config) {
		c.Emulate = &dev
		if mod != nil {
			mod(c)
		}
	})
}

// runIterations runs n iterations of s, each asking for the next in one round
// trip, and closes it.
func runIterations(t *testing.T, s *client.Session, n int) {
	t.Helper()
	if err := s.Begin(); err != nil {
		t.Error(err)
		return
	}
	for i := 1; i < n; i++ {
		if err := s.Next(0, 0); err != nil {
			t.Error(err)
			return
		}
	}
	if err := s.End(0, 0); err != nil {
		t.Error(err)
	}
	s.Close(true)
}

// count is how many events of kind job has in the log.
func (m *memLog) count(kind, job string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.ev {
		if e.Kind == kind && e.Job == job {
			n++
		}
	}
	return n
}

// gpuUntilFinish is each job's GPU time (the log's iter_end) after each
// iteration's end, up to the first job's finish, in log order.
func gpuUntilFinish(m *memLog, each func(job string, got map[string]float64)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	got := map[string]float64{}
	for _, e := range m.ev {
		if e.Kind == eventlog.Finish {
			return
		}
		if e.Kind == eventlog.IterEnd {
			got[e.Job] += e.GPU
			each(e.Job, got)
		}
	}
}

// TestEmulatedSharesGetTimeOneToThree: on a daemon emulating a P100 under
// wfair, two claims of 3500 and 10500 MiB of the GPU (shares 0.25 and 0.75,
// from their memory) give their sessions GPU time 1:3 within one iteration,
// once the later one has caught up: a's GPU time and b's divided by 3 then
// differ by at most one iteration (10 ms) until one finishes.
func TestEmulatedSharesGetTimeOneToThree(t *testing.T) {
	d := emulatedP100(t, "wfair", nil)
	for _, c := range []struct {
		uid, secret string
		mib         float64
	}{{"uid-a", secretA, 3500}, {"uid-b", secretB, 10500}} {
		if _, err := d.ReserveClaim(c.uid, "ns/"+c.uid, 0, c.mib, c.secret); err != nil {
			t.Fatal(err)
		}
	}
	a := openEmulated(t, d, client.Options{Job: "a", PersistentMiB: 500, EphemeralMiB: 500, IterS: 0.01, Demand: 1, Claim: "uid-a", ClaimSecret: secretA})
	b := openEmulated(t, d, client.Options{Job: "b", PersistentMiB: 500, EphemeralMiB: 500, IterS: 0.01, Demand: 1, Claim: "uid-b", ClaimSecret: secretB})
	var wg sync.WaitGroup
	for _, c := range []struct {
		s *client.Session
		n int
	}{{a, 30}, {b, 100}} {
		wg.Add(1)
		go func() { defer wg.Done(); runIterations(t, c.s, c.n) }()
	}
	wg.Wait()
	caught, checked := false, 0
	var last map[string]float64
	gpuUntilFinish(d.log, func(job string, got map[string]float64) {
		// Whichever began first ran alone; from when the other has caught up:
		caught = caught || (got["a"] > 0 && got["b"] > 0 && math.Abs(got["a"]-got["b"]/3) <= 0.01+1e-9)
		if !caught {
			return
		}
		checked++
		if diff := got["a"] - got["b"]/3; math.Abs(diff) > 0.01+1e-9 {
			t.Errorf("after %s's iteration: a %.3f s, b %.3f s of GPU time: not 1:3 within one iteration", job, got["a"], got["b"])
		}
		last = map[string]float64{"a": got["a"], "b": got["b"]}
	})
	if checked < 80 || math.Abs(last["a"]-0.3) > 1e-9 {
		t.Errorf("checked %d iterations, ending with %v: want a's 30 iterations (0.3 s) done beside b's 0.87 to 0.9 s", checked, last)
	}
}

// TestEmulatedFloorLendsAnIdleShare: under floor on the emulating daemon, b
// (share 3) is admitted and idle while a (share 1) runs alone, using b's share;
// once b asks, a keeps its floor: it never waits more than three of b's
// iterations (wfair would run b alone until it caught up), and b gets its 3/4.
func TestEmulatedFloorLendsAnIdleShare(t *testing.T) {
	d := emulatedP100(t, "floor", nil)
	a := openEmulated(t, d, client.Options{Job: "a", PersistentMiB: 500, EphemeralMiB: 500, IterS: 0.01, Demand: 1, Share: 1})
	b := openEmulated(t, d, client.Options{Job: "b", PersistentMiB: 500, EphemeralMiB: 500, IterS: 0.01, Demand: 1, Share: 3})
	done := make(chan struct{})
	go func() { defer close(done); runIterations(t, a, 60) }()
	// b asks only once a has run 20 iterations alone.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if d.log.count(eventlog.IterEnd, "a") >= 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a did not run 20 iterations")
		}
	}
	runIterations(t, b, 60)
	<-done
	var order []string
	gpuUntilFinish(d.log, func(job string, _ map[string]float64) { order = append(order, job) })
	first := strings.Index(strings.Join(order, ""), "b")
	if first < 20 {
		t.Fatalf("b ran at %d, before a's 20 iterations alone: %v", first, order)
	}
	runOfB, longest := 0, 0
	for _, job := range order[first:] {
		if job == "b" {
			runOfB++
			longest = max(longest, runOfB)
			continue
		}
		runOfB = 0
	}
	if longest > 3 || longest < 2 {
		t.Errorf("b ran up to %d iterations in a row once it asked (order %v): want at most 3, a's floor (1/4) holding", longest, order)
	}
}

// A session's share is in its arrive event, so that a restart restores it: the
// journal's recovered session and its snapshot keep it, read back from the file
// as written.
func TestShareSurvivesTheJournal(t *testing.T) {
	var buf bytes.Buffer
	w := eventlog.NewWriter(&buf)
	w.Emit(eventlog.Event{Kind: eventlog.Run, Policy: "wfair", Engine: "live", CapacityMiB: 14000})
	w.Emit(eventlog.Event{T: 1, Kind: eventlog.Arrive, Job: "w", JobKind: "train", PersistentMiB: 10, EphemeralMiB: 10, Share: 3})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/j.jsonl"
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	j, err := server.ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if o := j.Open(); len(o) != 1 || o[0].Share != 3 {
		t.Fatalf("recovered %+v, want w with share 3", o)
	}
	if st := j.States(); len(st) != 1 || st[0].Share != 3 {
		t.Errorf("snapshot %+v, want share 3", st)
	}
}
