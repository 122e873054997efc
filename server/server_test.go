package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	salusv1 "github.com/salusgo/salus/api/salus/v1"
	"github.com/salusgo/salus/api/salus/v1/salusv1connect"
	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/server"
)

// memLog keeps events in memory.
type memLog struct {
	mu sync.Mutex
	ev []eventlog.Event
}

func (m *memLog) Emit(e eventlog.Event) {
	m.mu.Lock()
	m.ev = append(m.ev, e)
	m.mu.Unlock()
}

func (m *memLog) kinds(job string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, e := range m.ev {
		if e.Job == job {
			out = append(out, e.Kind)
		}
	}
	return out
}

func (m *memLog) find(kind, job string) (eventlog.Event, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.ev {
		if e.Kind == kind && e.Job == job {
			return e, true
		}
	}
	return eventlog.Event{}, false
}

type daemon struct {
	*server.Server
	addr string
	log  *memLog
}

func start(t testing.TB, policy string, capacity float64, mod func(*server.Config)) *daemon {
	t.Helper()
	p, err := core.Lookup(policy)
	if err != nil {
		t.Fatal(err)
	}
	lg := &memLog{}
	cfg := server.Config{Policy: p, CapacityMiB: capacity, Log: lg,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if mod != nil {
		mod(&cfg)
	}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.ServeFast(l) }()
	t.Cleanup(func() {
		s.Shutdown()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return &daemon{Server: s, addr: "unix:" + sock, log: lg}
}

func open(t testing.TB, d *daemon, job string, pers, eph, declared float64) *client.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := client.Open(ctx, d.addr, client.Options{Job: job, PersistentMiB: pers, EphemeralMiB: eph, DeclaredS: declared})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSessionLifecycleAndLog(t *testing.T) {
	d := start(t, "pack", 14000, nil)
	s := open(t, d, "a", 500, 1000, 2)
	if s.Lane != 0 || s.LaneMiB <= 0 || s.Policy != "pack" || s.StartupOnGPU {
		t.Fatalf("admission %+v", s.Admission)
	}
	for i := 0; i < 3; i++ {
		if err := s.Begin(); err != nil {
			t.Fatal(err)
		}
		if err := s.End(time.Millisecond, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(true); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(d.log.kinds("a"), " ")
	want := "arrive admit iter_start iter_end iter_start iter_end iter_start iter_end finish"
	if got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	if st := d.Stats(); st.Iterations != 3 || st.Finished != 1 || st.Sessions != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestFastPathOverTCP(t *testing.T) {
	d := start(t, "pack", 1000, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go d.ServeFast(l) // returns at Shutdown, in start's cleanup
	s, err := client.Open(context.Background(), l.Addr().String(), client.Options{Job: "tcp", PersistentMiB: 1, EphemeralMiB: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	if err := s.Next(time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.End(time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(true); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(d.log.kinds("tcp"), " "); got != "arrive admit iter_start iter_end iter_start iter_end finish" {
		t.Errorf("events %q", got)
	}
}

func TestFifoHoldsGPUThroughStartup(t *testing.T) {
	d := start(t, "fifo", 14000, nil)
	a := open(t, d, "a", 500, 1000, 1)
	if !a.StartupOnGPU {
		t.Fatal("fifo admission should say the job holds the GPU through start-up")
	}
	// b waits for admission until a leaves.
	admitted := make(chan *client.Session, 1)
	go func() {
		s, err := client.Open(context.Background(), d.addr, client.Options{Job: "b", PersistentMiB: 500, EphemeralMiB: 1000})
		if err != nil {
			t.Error(err)
		}
		admitted <- s
	}()
	select {
	case <-admitted:
		t.Fatal("b admitted while a holds the GPU")
	case <-time.After(50 * time.Millisecond):
	}
	a.Close(true)
	select {
	case b := <-admitted:
		b.Close(true)
	case <-time.After(5 * time.Second):
		t.Fatal("b not admitted after a left")
	}
}

// A job that ends an iteration and asks for the next one at once keeps competing at
// the boundary: under srtf the shorter job runs all its iterations first.
func TestSrtfPreemptsAtBoundary(t *testing.T) {
	d := start(t, "srtf", 14000, func(c *server.Config) { c.Grace = 200 * time.Millisecond })
	long := open(t, d, "long", 100, 100, 10)
	if err := long.Begin(); err != nil {
		t.Fatal(err)
	}
	short := open(t, d, "short", 100, 100, 1)
	granted := make(chan error, 1)
	go func() { granted <- short.Begin() }()
	time.Sleep(20 * time.Millisecond) // short is now ready
	if err := long.End(time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	longGranted := make(chan error, 1)
	go func() { longGranted <- long.Begin() }()
	if err := <-granted; err != nil {
		t.Fatal(err)
	}
	select {
	case <-longGranted:
		t.Fatal("long granted while short runs")
	case <-time.After(20 * time.Millisecond):
	}
	short.End(time.Millisecond, 0)
	short.Close(true)
	if err := <-longGranted; err != nil {
		t.Fatal(err)
	}
	long.End(time.Millisecond, 0)
	long.Close(true)
	if e, _ := d.log.find(eventlog.IterStart, "short"); e.Prev != "long" {
		t.Errorf("short's start should record the switch from long: %+v", e)
	}
}

// A job that does not begin again within the grace window yields its lane.
func TestGraceWindowYields(t *testing.T) {
	d := start(t, "fair", 14000, func(c *server.Config) { c.Grace = 5 * time.Millisecond })
	a := open(t, d, "a", 100, 100, 1)
	b := open(t, d, "b", 100, 100, 1)
	a.Begin()
	a.End(time.Millisecond, 0)
	done := make(chan error, 1)
	go func() { done <- b.Begin() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("b never got the lane a stopped using")
	}
	b.End(0, 0)
	a.Close(true)
	b.Close(true)
}

// An end with release gives the lane back at once: with a grace window of an
// hour, b still gets the lane a released, and the core saw a's yield at a's end.
func TestEndReleaseYieldsAtOnce(t *testing.T) {
	d := start(t, "fair", 14000, func(c *server.Config) { c.Grace = time.Hour })
	a := open(t, d, "a", 100, 100, 1)
	b := open(t, d, "b", 100, 100, 1)
	if err := a.Begin(); err != nil {
		t.Fatal(err)
	}
	if err := a.EndRelease(time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Begin() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second): // the grace window is an hour: only the release lets b in
		t.Fatal("b never got the lane a released")
	}
	b.End(0, 0)
	b.Close(true) // b, with no release, would hold the lane for the hour
	// a asks again after its pause: it waits for the lane like any job.
	if err := a.Begin(); err != nil {
		t.Fatal(err)
	}
	a.End(0, 0)
	a.Close(true)
}

func TestConnectionLossReturnsMemory(t *testing.T) {
	d := start(t, "fifo", 1000, nil)
	a := open(t, d, "a", 500, 400, 1)
	if err := a.Begin(); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan *client.Session, 1)
	go func() {
		s, err := client.Open(context.Background(), d.addr, client.Options{Job: "b", PersistentMiB: 500, EphemeralMiB: 400})
		if err != nil {
			t.Error(err)
		}
		waiting <- s
	}()
	time.Sleep(20 * time.Millisecond)
	a.Abort() // as if the worker was killed mid-iteration
	select {
	case b := <-waiting:
		if b == nil {
			return
		}
		if err := b.Begin(); err != nil {
			t.Fatal(err)
		}
		b.End(0, 0)
		b.Close(true)
	case <-time.After(5 * time.Second):
		t.Fatal("b not admitted after a's connection closed")
	}
	if e, ok := d.log.find(eventlog.Lost, "a"); !ok || e.Reason != "connection closed" {
		t.Errorf("lost event %+v %v", e, ok)
	}
}

func TestLeaseExpiry(t *testing.T) {
	d := start(t, "pack", 1000, func(c *server.Config) { c.Lease = 100 * time.Millisecond })
	c := rawConn(t, d)
	rep := c.call(`{"op":"open","id":1,"version":1,"job":"quiet","persistent_mib":10,"ephemeral_mib":10}`)
	if rep["ok"] != true {
		t.Fatalf("open: %v", rep)
	}
	// No heartbeat: within a few leases the daemon drops the session and says so.
	rep = c.readFrame()
	if rep["code"] != "lost" {
		t.Fatalf("expected a lost frame, got %v", rep)
	}
	if _, ok := d.log.find(eventlog.Lost, "quiet"); !ok {
		t.Error("no lost event")
	}
	if st := d.Stats(); st.Sessions != 0 {
		t.Errorf("session still there: %+v", st)
	}
}

func TestShutdownTellsClients(t *testing.T) {
	p, _ := core.Lookup("fifo")
	s, err := server.New(server.Config{Policy: p, CapacityMiB: 1000, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "s.sock")
	l, _ := net.Listen("unix", sock)
	served := make(chan error, 1)
	go func() { served <- s.ServeFast(l) }()
	a, err := client.Open(context.Background(), "unix:"+sock, client.Options{Job: "a", PersistentMiB: 10, EphemeralMiB: 10})
	if err != nil {
		t.Fatal(err)
	}
	bErr := make(chan error, 1)
	go func() {
		_, err := client.Open(context.Background(), "unix:"+sock, client.Options{Job: "b", PersistentMiB: 10, EphemeralMiB: 10})
		bErr <- err
	}()
	time.Sleep(20 * time.Millisecond)
	s.Shutdown()
	if err := <-bErr; !client.Ended(err) || !strings.Contains(err.Error(), "shutdown") {
		t.Errorf("waiting open got %v, want a shutdown error", err)
	}
	if err := a.Begin(); !client.Ended(err) {
		t.Errorf("begin after shutdown: %v", err)
	}
	if err := <-served; err != nil {
		t.Error(err)
	}
}

// raw is a fast-path connection without the client package, for bad input.
type raw struct {
	t testing.TB
	c net.Conn
}

func rawConn(t testing.TB, d *daemon) *raw {
	t.Helper()
	c, err := net.Dial("unix", strings.TrimPrefix(d.addr, "unix:"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &raw{t, c}
}

func (r *raw) sendBytes(b []byte) {
	r.t.Helper()
	if _, err := r.c.Write(b); err != nil {
		r.t.Fatal(err)
	}
}

func frame(body string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func (r *raw) readFrame() map[string]any {
	r.t.Helper()
	r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var hdr [4]byte
	if _, err := io.ReadFull(r.c, hdr[:]); err != nil {
		return map[string]any{"eof": err.Error()}
	}
	b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(r.c, b); err != nil {
		r.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		r.t.Fatalf("daemon sent bad JSON %q: %v", b, err)
	}
	return m
}

func (r *raw) call(body string) map[string]any {
	r.sendBytes(frame(body))
	return r.readFrame()
}

// TestReleaseCacheWhenJobsWait: a begin reply asks the client to give back cached
// memory exactly while another job waits for memory.
func TestReleaseCacheWhenJobsWait(t *testing.T) {
	d := start(t, "pack", 1000, nil)
	a := rawConn(t, d)
	if r := a.call(`{"op":"open","id":1,"version":1,"job":"a","persistent_mib":300,"ephemeral_mib":300}`); r["ok"] != true {
		t.Fatal(r)
	}
	if r := a.call(`{"op":"begin","id":2}`); r["ok"] != true || r["release_cache"] != nil {
		t.Fatalf("nobody waits, yet: %v", r)
	}
	a.call(`{"op":"end","id":3}`)
	b := rawConn(t, d)
	b.sendBytes(frame(`{"op":"open","id":1,"version":1,"job":"b","persistent_mib":300,"ephemeral_mib":300}`))
	deadline := time.Now().Add(5 * time.Second)
	for len(d.Sessions()) < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if r := a.call(`{"op":"begin","id":4}`); r["ok"] != true || r["release_cache"] != true {
		t.Fatalf("b waits for memory: %v", r)
	}
}

// TestMalformedRequests throws bad requests at the fast path: each gets an error
// naming the problem, and the daemon keeps serving.
func TestMalformedRequests(t *testing.T) {
	d := start(t, "fair", 1000, nil)
	// Requests on a connection that stays usable.
	kept := []struct {
		body, code string
	}{
		{`{"op":"begin","id":1}`, "not_open"},
		{`{"op":"end","id":1}`, "not_open"},
		{`{"op":"fly","id":1}`, "bad_request"},
		{`{"op":"open","id":0,"version":1,"job":"x"}`, "bad_request"},
		{`{"op":"open","id":1,"version":2,"job":"x"}`, "bad_request"},
		{`{"op":"open","id":1,"version":1}`, "bad_request"},
		{`{"op":"open","id":1,"version":1,"job":"x","persistent_mib":-5}`, "bad_request"},
		{`{"op":"open","id":1,"version":1,"job":"x","persistent_mib":"lots"}`, "bad_request"},
		{`{"op":"open","id":1,"version":1,"job":"x","kind":"gaming"}`, "bad_request"},
		{`{"op":"open","id":1,"version":1,"job":"x","persistent_mib":900,"ephemeral_mib":900}`, "rejected"},
		{`{"op":"open","id":1,"version":1,"job":"x","model":"nosuchmodel"}`, "rejected"},
		{`{"op":"open","id":2,"version":1,"job":"ok","persistent_mib":10,"ephemeral_mib":10}`, ""},
		{`{"op":"open","id":3,"version":1,"job":"again"}`, "already_open"},
		{`{"op":"end","id":4}`, "wrong_phase"},
		{`{"op":"begin","id":5}`, ""},
		{`{"op":"begin","id":6}`, "wrong_phase"},
		{`{"op":"end","id":7,"duration_s":-1}`, "bad_request"},
		{`{"op":"end","id":8,"duration_s":0.001}`, ""},
		{`{"op":"end","id":9}`, "wrong_phase"},
		{`{"op":"end","id":10,"next":true}`, "wrong_phase"},
		{`{"op":"begin","id":11}`, ""},
		{`{"op":"end","id":12,"next":true,"duration_s":"x"}`, "bad_request"},
		{`{"op":"end","id":13,"next":true}`, ""}, // ends and begins: an iteration runs again
		{`{"op":"begin","id":14}`, "wrong_phase"},
		{`{"op":"end","id":15}`, ""},
	}
	c := rawConn(t, d)
	for _, k := range kept {
		rep := c.call(k.body)
		if k.code == "" {
			if rep["ok"] != true {
				t.Errorf("%s: %v, want ok", k.body, rep)
			}
			continue
		}
		if rep["ok"] != false || rep["code"] != k.code || rep["error"] == "" {
			t.Errorf("%s: %v, want code %s", k.body, rep, k.code)
		}
	}
	// A duplicate job name on another connection is rejected.
	if rep := rawConn(t, d).call(`{"op":"open","id":1,"version":1,"job":"ok"}`); rep["code"] != "rejected" {
		t.Errorf("duplicate job: %v", rep)
	}
	// Frames that end the connection.
	fatal := []struct {
		name string
		b    []byte
	}{
		{"zero length", []byte{0, 0, 0, 0}},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff}},
		{"not JSON", frame(`hello`)},
		{"JSON array", frame(`[1,2]`)},
		{"truncated JSON", frame(`{"op":"open"`)},
		{"two objects in one frame", frame(`{"op":"heartbeat"}{"op":"begin","id":1}`)},
	}
	for _, f := range fatal {
		r := rawConn(t, d)
		r.sendBytes(f.b)
		rep := r.readFrame()
		if rep["code"] != "bad_frame" {
			t.Errorf("%s: %v, want bad_frame", f.name, rep)
		}
		if rep := r.readFrame(); rep["eof"] == nil {
			t.Errorf("%s: connection should be closed, got %v", f.name, rep)
		}
	}
	// The session "ok" was untouched by all this and the daemon still serves.
	if rep := c.call(`{"op":"begin","id":20}`); rep["ok"] != true {
		t.Errorf("begin after bad requests: %v", rep)
	}
	c.call(`{"op":"end","id":21}`)
	if rep := c.call(`{"op":"close","id":22}`); rep["ok"] != true {
		t.Errorf("close: %v", rep)
	}
	s := open(t, d, "after", 10, 10, 1)
	s.Begin()
	s.End(0, 0)
	s.Close(true)
	if st := d.Stats(); st.Lost != 0 || st.Finished != 2 {
		t.Errorf("stats after bad requests %+v", st)
	}
}

func TestConnectAPI(t *testing.T) {
	d := start(t, "srtf", 14000, withTokens)
	hs := httptest.NewUnstartedServer(d.Handler())
	hs.EnableHTTP2 = true
	hs.Start()
	defer hs.Close()
	ctx := context.Background()
	for _, opt := range [][]connect.ClientOption{nil, {connect.WithGRPC()}, {connect.WithProtoJSON()}} {
		sc := salusv1connect.NewSchedulerServiceClient(hs.Client(), hs.URL, append(opt, bearer(userToken))...)
		job := "c" + strings.Repeat("x", len(opt))
		_ = opt
		op, err := sc.OpenSession(ctx, connect.NewRequest(&salusv1.OpenSessionRequest{Job: job, PersistentMib: 100, EphemeralMib: 100, DeclaredS: 1}))
		if err != nil {
			t.Fatal(err)
		}
		sid, sec := op.Msg.Session, op.Msg.Secret
		if _, err := sc.EndIteration(ctx, connect.NewRequest(&salusv1.EndIterationRequest{Session: sid, Secret: sec})); connect.CodeOf(err) != connect.CodeFailedPrecondition {
			t.Errorf("end before begin: %v", err)
		}
		if _, err := sc.BeginIteration(ctx, connect.NewRequest(&salusv1.BeginIterationRequest{Session: sid, Secret: sec})); err != nil {
			t.Fatal(err)
		}
		if _, err := sc.EndIteration(ctx, connect.NewRequest(&salusv1.EndIterationRequest{Session: sid, Secret: sec, DurationS: 0.001})); err != nil {
			t.Fatal(err)
		}
		if _, err := sc.BeginIteration(ctx, connect.NewRequest(&salusv1.BeginIterationRequest{Session: "nobody"})); connect.CodeOf(err) != connect.CodeNotFound {
			t.Errorf("unknown session: %v", err)
		}
		ac := salusv1connect.NewAdminServiceClient(hs.Client(), hs.URL, append(opt, bearer(adminToken))...)
		ss, err := ac.ListSessions(ctx, connect.NewRequest(&salusv1.ListSessionsRequest{}))
		if err != nil || len(ss.Msg.Sessions) != 1 || ss.Msg.Sessions[0].Iterations != 1 {
			t.Fatalf("sessions %v %v", ss, err)
		}
		ln, err := ac.ListLanes(ctx, connect.NewRequest(&salusv1.ListLanesRequest{}))
		if err != nil || len(ln.Msg.Lanes) != 1 {
			t.Fatalf("lanes %v %v", ln, err)
		}
		pol, err := ac.GetPolicy(ctx, connect.NewRequest(&salusv1.GetPolicyRequest{}))
		if err != nil || pol.Msg.Name != "srtf" {
			t.Fatalf("policy %v %v", pol, err)
		}
		if _, err := sc.CloseSession(ctx, connect.NewRequest(&salusv1.CloseSessionRequest{Session: sid, Secret: sec})); err != nil {
			t.Fatal(err)
		}
	}
	// Plain HTTP/JSON works too, and /metrics serves the gauges.
	req, _ := http.NewRequest("POST", hs.URL+salusv1connect.AdminServiceGetStatsProcedure, strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+userToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(body, []byte(`"finished":"3"`)) {
		t.Errorf("stats over HTTP/JSON: %s", body)
	}
	resp, err = http.Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{"salus_sessions 0", "salus_iterations_total 3", "salus_grant_latency_seconds_count 3", "salus_admission_queue 0"} {
		if !bytes.Contains(body, []byte(m)) {
			t.Errorf("/metrics lacks %q", m)
		}
	}
}
