package server_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	salusv1 "github.com/salusgo/salus/api/salus/v1"
	"github.com/salusgo/salus/api/salus/v1/salusv1connect"
	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/server"
)

// Tests of the daemon's bounded and deadlined I/O: no client, however slow,
// silent or greedy, holds another client, the lease checker or shutdown.

// logBuf collects the daemon's structured log.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (r *raw) readFrameWithin(d time.Duration) map[string]any {
	r.t.Helper()
	r.c.SetReadDeadline(time.Now().Add(d))
	defer r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	return r.readFrame()
}

// untilEOF reads frames until the daemon closes the connection, within d; it
// returns the codes of the frames read, and whether the connection closed.
func (r *raw) untilEOF(d time.Duration) (codes []string, closed bool) {
	r.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		rep := r.readFrameWithin(time.Until(deadline))
		if e, ok := rep["eof"].(string); ok {
			return codes, !strings.Contains(e, "timeout")
		}
		c, _ := rep["code"].(string)
		codes = append(codes, c)
	}
	return codes, false
}

func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// flakyListener fails its first accepts as a process out of file descriptors does.
type flakyListener struct {
	net.Listener
	fails atomic.Int32
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "unix", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestAcceptErrorsBackOff: "too many open files" at accept does not end the fast
// path: it backs off, logs (once, not once per failure) and serves again.
func TestAcceptErrorsBackOff(t *testing.T) {
	lb := &logBuf{}
	d := start(t, "pack", 1000, func(c *server.Config) { c.Logger = slog.New(slog.NewTextHandler(lb, nil)) })
	sock := t.TempDir() + "/flaky.sock"
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	fl := &flakyListener{Listener: l}
	fl.fails.Store(4)
	served := make(chan error, 1)
	go func() { served <- d.ServeFast(fl) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := client.Open(ctx, "unix:"+sock, client.Options{Job: "after-emfile", PersistentMiB: 1, EphemeralMiB: 1})
	if err != nil {
		select {
		case err2 := <-served:
			t.Fatalf("the fast path stopped at an accept error: %v (open: %v)", err2, err)
		default:
		}
		t.Fatal(err)
	}
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	s.Close(true)
	select {
	case err := <-served:
		t.Fatalf("ServeFast returned %v while the daemon runs", err)
	default:
	}
	if n := strings.Count(lb.String(), "too many open files"); n != 1 {
		t.Errorf("4 accept errors within a second logged %d times, want once (rate-limited):\n%s", n, lb.String())
	}
	// The HTTP API: net/http backs off; its log goes to the daemon's, rate-limited.
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hl := &flakyListener{Listener: tl}
	hl.fails.Store(4)
	hs := d.NewHTTPServer()
	go hs.Serve(d.LimitListener(hl))
	defer hs.Close()
	resp, err := http.Get("http://" + tl.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := strings.Count(lb.String(), "Accept error"); n != 1 {
		t.Errorf("4 HTTP accept errors logged %d times, want once:\n%s", n, lb.String())
	}
}

// TestConnectionLimit: a connection beyond --max-conns is told why and closed;
// the daemon keeps serving those it has, and takes new ones when some close.
func TestConnectionLimit(t *testing.T) {
	// One user (the test's uid) may take every slot here; conns_test.go tests
	// the per-user share. Every slot carries a session: a connection without
	// one would give its slot to the newcomer.
	d := start(t, "pack", 1000, func(c *server.Config) { c.MaxConns, c.MaxConnsPerUser = 3, -1 })
	a := open(t, d, "a", 1, 1, 1)
	b := open(t, d, "b", 1, 1, 1)
	third := rawConn(t, d)
	if rep := third.call(`{"op":"open","id":1,"version":1,"job":"third","persistent_mib":1,"ephemeral_mib":1}`); rep["ok"] != true {
		t.Fatal(rep)
	}
	over := rawConn(t, d)
	rep := over.readFrameWithin(2 * time.Second)
	if rep["code"] != "too_many_connections" || !strings.Contains(fmt.Sprint(rep["error"]), "3") {
		t.Fatalf("fourth connection: %v, want code too_many_connections naming the limit", rep)
	}
	if rep := over.readFrameWithin(2 * time.Second); rep["eof"] == nil || strings.Contains(fmt.Sprint(rep["eof"]), "timeout") {
		t.Errorf("refused connection not closed: %v", rep)
	}
	for _, s := range []*client.Session{a, b} {
		if err := s.Begin(); err != nil {
			t.Fatal(err)
		}
		if err := s.End(0, 0); err != nil {
			t.Fatal(err)
		}
	}
	third.c.Close()
	var c *client.Session
	waitFor(t, 2*time.Second, "no connection taken after one closed", func() bool {
		var err error
		c, err = client.Open(context.Background(), d.addr, client.Options{Job: "c", PersistentMiB: 1, EphemeralMiB: 1})
		return err == nil
	})
	c.Close(true)
	a.Close(true)
	b.Close(true)
}

// TestHandshakeTimeout: connections that do not open a session within the
// handshake timeout are closed, whatever they send meanwhile, and the daemon keeps
// serving.
func TestHandshakeTimeout(t *testing.T) {
	const hs = 150 * time.Millisecond
	d := start(t, "pack", 1000, func(c *server.Config) { c.HandshakeTimeout = hs; c.ReadTimeout = time.Minute })
	cases := map[string]func(r *raw){
		"silent":      func(r *raw) {},
		"half header": func(r *raw) { r.sendBytes([]byte{0, 0}) },
		"half frame":  func(r *raw) { r.sendBytes(frame(`{"op":"open","id":1,"version":1,"job":"half"}`)[:20]) },
		"refused open, then silent": func(r *raw) {
			r.sendBytes(frame(`{"op":"open","id":1,"version":9,"job":"v9"}`))
		},
		"heartbeats only": func(r *raw) {
			go func() {
				for i := 0; i < 20; i++ {
					if _, err := r.c.Write(frame(`{"op":"heartbeat"}`)); err != nil {
						return
					}
					time.Sleep(hs / 5)
				}
			}()
		},
	}
	var wg sync.WaitGroup
	for name, send := range cases {
		// From before the dial: the daemon's handshake clock starts at its accept,
		// later, so it can never close the connection before hs has passed here.
		// A loaded machine may close it late, never early.
		t0 := time.Now()
		r := rawConn(t, d)
		wg.Add(1)
		go func() {
			defer wg.Done()
			send(r)
			codes, closed := r.untilEOF(30 * time.Second)
			el := time.Since(t0)
			if !closed {
				t.Errorf("%s: not closed after %v (frames %v)", name, el, codes)
				return
			}
			if el < hs {
				t.Errorf("%s: closed after %v, before the handshake timeout of %v", name, el, hs)
			}
			if len(codes) == 0 || codes[len(codes)-1] != "timeout" {
				t.Errorf("%s: frames %v before close, want a last one with code timeout", name, codes)
			}
		}()
	}
	// Many stalled connections at once.
	var stalled []*raw
	for range 100 {
		r := rawConn(t, d)
		r.sendBytes([]byte{0, 0, 0, 9, '{'})
		stalled = append(stalled, r)
	}
	wg.Wait()
	for i, r := range stalled {
		if _, closed := r.untilEOF(time.Second); !closed {
			t.Fatalf("stalled connection %d not closed", i)
		}
	}
	s := open(t, d, "healthy", 1, 1, 1)
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	s.Close(true)
}

// TestStalledFrameLosesSession: once a frame's first byte came, the rest must come
// within the read timeout, or the connection is closed and its session lost; an
// open session that sends nothing at all is governed by its lease alone.
func TestStalledFrameLosesSession(t *testing.T) {
	const rt = 100 * time.Millisecond
	d := start(t, "pack", 1000, func(c *server.Config) { c.ReadTimeout = rt; c.Lease = time.Minute })
	quiet := rawConn(t, d)
	if rep := quiet.call(`{"op":"open","id":1,"version":1,"job":"quiet","persistent_mib":1,"ephemeral_mib":1}`); rep["ok"] != true {
		t.Fatal(rep)
	}
	r := rawConn(t, d)
	if rep := r.call(`{"op":"open","id":1,"version":1,"job":"stall","persistent_mib":1,"ephemeral_mib":1}`); rep["ok"] != true {
		t.Fatal(rep)
	}
	t0 := time.Now()
	r.sendBytes(frame(`{"op":"begin","id":2}`)[:9])
	codes, closed := r.untilEOF(2 * time.Second)
	if !closed {
		t.Fatalf("a half frame held the connection for %v", time.Since(t0))
	}
	if el := time.Since(t0); el < rt-10*time.Millisecond || el > rt+500*time.Millisecond {
		t.Errorf("closed after %v, want about %v", el, rt)
	}
	if !slices.Contains(codes, "timeout") {
		t.Errorf("frames %v, want one with code timeout", codes)
	}
	e, ok := d.log.find(eventlog.Lost, "stall")
	if !ok || !strings.Contains(e.Reason, "frame") {
		t.Errorf("lost event %+v %v, want a reason about the incomplete frame", e, ok)
	}
	// The quiet session sent nothing for several read timeouts: still there.
	time.Sleep(3 * rt)
	if rep := quiet.call(`{"op":"begin","id":2}`); rep["ok"] != true {
		t.Errorf("quiet session: %v", rep)
	}
}

// TestSlowReaderDoesNotWedgeOthers: a client that sends requests but never reads
// its replies is dropped as lost; another job sharing its lane keeps iterating at
// its usual round trip, and shutdown stays fast.
func TestSlowReaderDoesNotWedgeOthers(t *testing.T) {
	d := start(t, "fair", 1000, func(c *server.Config) { c.Lease = time.Minute })
	a := open(t, d, "a", 10, 10, 1)
	b := rawConn(t, d)
	if rep := b.call(`{"op":"open","id":1,"version":1,"job":"b","persistent_mib":10,"ephemeral_mib":10}`); rep["ok"] != true {
		t.Fatal(rep)
	}
	const n = 300
	loop := func() ([]time.Duration, error) {
		lat := make([]time.Duration, 0, n)
		if err := a.Begin(); err != nil {
			return lat, err
		}
		for range n {
			t0 := time.Now()
			if err := a.Next(time.Microsecond, 0); err != nil {
				return lat, err
			}
			lat = append(lat, time.Since(t0))
		}
		return lat, a.End(time.Microsecond, 0)
	}
	base, err := loop()
	if err != nil {
		t.Fatal(err)
	}
	// b asks for an iteration (so that a's end hands it the lane), then floods
	// requests, each answered busy, and never reads.
	if err := a.Begin(); err != nil {
		t.Fatal(err)
	}
	b.sendBytes(frame(`{"op":"begin","id":2}`))
	flood := bytes.Repeat(frame(`{"op":"begin","id":3}`), 20000)
	go b.c.Write(flood) // fails once the daemon drops b
	time.Sleep(20 * time.Millisecond)
	if err := a.End(time.Microsecond, 0); err != nil {
		t.Fatal(err)
	}
	type result struct {
		lat []time.Duration
		err error
	}
	done := make(chan result, 1)
	go func() {
		lat, err := loop()
		done <- result{lat, err}
	}()
	var under []time.Duration
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		under = r.lat
	case <-time.After(5 * time.Second):
		t.Fatal("a is wedged behind b, which does not read its replies")
	}
	e, ok := d.log.find(eventlog.Lost, "b")
	if !ok || !(strings.Contains(e.Reason, "reply") || strings.Contains(e.Reason, "write")) {
		t.Errorf("b: lost event %+v %v, want one saying it did not read its replies", e, ok)
	}
	slices.Sort(base)
	slices.Sort(under)
	// The first round trip after b's flood may wait for b to be dropped (b holds
	// the lane meanwhile): compare medians, and bound the worst.
	mb, mu := base[n/2], under[n/2]
	t.Logf("a's round trips alone: median %v, p99 %v; beside b's flood: median %v, p99 %v, max %v",
		mb, base[n*99/100], mu, under[n*99/100], under[n-1])
	if mu > 10*mb+2*time.Millisecond {
		t.Errorf("a's median round trip went from %v to %v beside a client that does not read", mb, mu)
	}
	if under[n-1] > time.Second {
		t.Errorf("a waited %v for one round trip", under[n-1])
	}
	t0 := time.Now()
	stopped := make(chan struct{})
	go func() { d.Shutdown(); close(stopped) }()
	select {
	case <-stopped:
		t.Logf("shutdown took %v", time.Since(t0))
	case <-time.After(time.Second):
		t.Fatal("shutdown takes more than 1 s")
	}
}

// TestShutdownWithClientsThatNeverRead: clients whose sockets are full (they sent
// requests and never read a reply) delay neither other clients nor shutdown, even
// with a long write timeout and a queue large enough never to fill.
func TestShutdownWithClientsThatNeverRead(t *testing.T) {
	d := start(t, "pack", 1000, func(c *server.Config) {
		c.WriteTimeout = time.Minute
		c.ReplyQueue = 64 << 20
		c.Lease = time.Minute
	})
	var flooded sync.WaitGroup
	for i := range 3 {
		r := rawConn(t, d)
		if rep := r.call(fmt.Sprintf(`{"op":"open","id":1,"version":1,"job":"deaf%d","persistent_mib":1,"ephemeral_mib":1}`, i)); rep["ok"] != true {
			t.Fatal(rep)
		}
		flooded.Add(1)
		go func() {
			defer flooded.Done()
			r.c.Write(bytes.Repeat(frame(`{"op":"fly","id":2}`), 20000)) // 20000 replies: megabytes
		}()
	}
	done := make(chan struct{})
	go func() { flooded.Wait(); close(done) }()
	select {
	case <-done: // the daemon read every request: its replies wait in the queues
	case <-time.After(5 * time.Second):
		t.Error("the daemon stopped reading clients that do not read their replies")
	}
	a := open(t, d, "a", 1, 1, 1)
	for range 10 {
		if err := a.Begin(); err != nil {
			t.Fatal(err)
		}
		if err := a.End(0, 0); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now()
	stopped := make(chan struct{})
	go func() { d.Shutdown(); close(stopped) }()
	select {
	case <-stopped:
		t.Logf("shutdown with three clients that never read took %v", time.Since(t0))
	case <-time.After(time.Second):
		t.Fatal("shutdown takes more than 1 s")
	}
	if err := a.Begin(); !client.Ended(err) {
		t.Errorf("a after shutdown: %v", err)
	}
}

// TestKeysAreCaseSensitive: keys are matched as docs/protocol.md spells them;
// a key that differs only in case is refused, naming it. Unknown keys are ignored.
func TestKeysAreCaseSensitive(t *testing.T) {
	d := start(t, "pack", 1000, nil)
	for _, body := range []string{
		`{"OP":"open","id":1,"version":1,"job":"x","persistent_mib":1,"ephemeral_mib":1}`,
		`{"op":"open","Id":1,"version":1,"job":"x","persistent_mib":1,"ephemeral_mib":1}`,
		`{"op":"open","id":1,"version":1,"Job":"x","persistent_mib":1,"ephemeral_mib":1}`,
		`{"op":"open","id":1,"version":1,"job":"x","persistent_MiB":1,"ephemeral_mib":1}`,
		`{"op":"open","id":1,"version":1,"job":"x","persistent_mib":1,"ephemeral_mib":1,"\u212aind":"infer"}`, // Kelvin sign
		`{"op":"open","id":1,"version":1,"job":"x","persistent_mib":1,"ephemeral_mib":1,"kind":"infer","KIND":"train"}`,
	} {
		rep := rawConn(t, d).call(body)
		if rep["code"] != "bad_request" || !strings.Contains(fmt.Sprint(rep["error"]), "case") {
			t.Errorf("%s: %v, want bad_request about the key's case", body, rep)
		}
	}
	if rep := rawConn(t, d).call(`{"op":"open","id":1,"version":1,"job":"y","persistent_mib":1,"ephemeral_mib":1,"colour":"red"}`); rep["ok"] != true {
		t.Errorf("an unknown key should be ignored: %v", rep)
	}
	if st := d.Stats(); st.Sessions != 1 {
		t.Errorf("sessions %d, want only y's", st.Sessions)
	}
}

// TestInvalidUTF8Refused: a string that is not valid UTF-8 (raw bytes, or an
// unpaired surrogate escape) is refused rather than replaced, so two such job names
// cannot collide; valid non-ASCII names are fine.
func TestInvalidUTF8Refused(t *testing.T) {
	d := start(t, "pack", 1000, nil)
	for _, job := range []string{"a\xff", "a\xfe", `a\ud800`, `a\udc00b`, `\ud800\ud800`, "\xc0\xaf"} {
		rep := rawConn(t, d).call(`{"op":"open","id":1,"version":1,"job":"` + job + `","persistent_mib":1,"ephemeral_mib":1}`)
		if rep["code"] != "bad_request" || !strings.Contains(fmt.Sprint(rep["error"]), "UTF-8") {
			t.Errorf("job %q: %v, want bad_request about UTF-8", job, rep)
		}
	}
	rep := rawConn(t, d).call(`{"op":"open","id":1,"version":1,"job":"x","model":"m` + "\xff" + `","persistent_mib":1,"ephemeral_mib":1}`)
	if rep["code"] != "bad_request" {
		t.Errorf("invalid UTF-8 in model: %v", rep)
	}
	for _, job := range []string{"ジョブ", `\ud83d\ude00`, `back\\ud800slash`} {
		if rep := rawConn(t, d).call(`{"op":"open","id":1,"version":1,"job":"` + job + `","persistent_mib":1,"ephemeral_mib":1}`); rep["ok"] != true {
			t.Errorf("job %q: %v, want ok", job, rep)
		}
	}
	// The connect API refuses them too (protobuf checks its strings).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := d.NewHTTPServer()
	go hs.Serve(l)
	defer hs.Close()
	for _, job := range []string{"a\xff", `a\ud800`} {
		resp, err := http.Post("http://"+l.Addr().String()+salusv1connect.SchedulerServiceOpenSessionProcedure, "application/json",
			strings.NewReader(`{"job":"`+job+`","persistentMib":1}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(b, []byte("invalid_argument")) {
			t.Errorf("connect API, job %q: HTTP %d %s", job, resp.StatusCode, b)
		}
	}
	// The server refuses such names whatever the transport.
	_, err = d.Open(server.OpenRequest{Job: "c\xff", PersistentMiB: 1}, "test", nil, func(server.OpenReply, error) {})
	if server.CodeOf(err) != server.CodeBadRequest {
		t.Errorf("Open with an invalid UTF-8 name: %v", err)
	}
}

// TestLeaseExpiresOnTime: a silent session is lost within a small bound after its
// lease, not up to a quarter of a lease later.
func TestLeaseExpiresOnTime(t *testing.T) {
	const lease = time.Second
	d := start(t, "pack", 1000, func(c *server.Config) { c.Lease = lease })
	var conns []*raw
	// Sessions opened 60 ms apart: a reaper that ticks every lease/4 (250 ms)
	// would be late by more than 100 ms for at least two of them (their delays
	// are spread 60 ms apart over the tick); this one is late by a millisecond
	// or so, and the bound leaves room for a busy machine.
	for i := range 4 {
		r := rawConn(t, d)
		if rep := r.call(fmt.Sprintf(`{"op":"open","id":1,"version":1,"job":"s%d","persistent_mib":1,"ephemeral_mib":1}`, i)); rep["ok"] != true {
			t.Fatal(rep)
		}
		conns = append(conns, r)
		time.Sleep(60 * time.Millisecond)
	}
	for i, r := range conns {
		if rep := r.readFrameWithin(3 * time.Second); rep["code"] != "lost" {
			t.Fatalf("s%d: %v, want a lost frame", i, rep)
		}
	}
	for i := range conns {
		job := fmt.Sprintf("s%d", i)
		adm, _ := d.log.find(eventlog.Admit, job)
		lost, ok := d.log.find(eventlog.Lost, job)
		if !ok {
			t.Fatalf("%s: no lost event", job)
		}
		late := time.Duration((lost.T-adm.T)*1e9) - lease
		t.Logf("%s: lost %v after its lease", job, late)
		if late < -5*time.Millisecond || late > lease/10 {
			t.Errorf("%s: lost %v after its lease of %v, want within %v", job, late, lease, lease/10)
		}
	}
}

// spaces is an endless reader of JSON whitespace.
type spaces struct{}

func (spaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

func httpDaemon(t *testing.T, mod func(*server.Config)) (*daemon, string) {
	t.Helper()
	d := start(t, "fifo", 1000, mod)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := d.NewHTTPServer()
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })
	return d, "http://" + l.Addr().String()
}

// TestHTTPBodyLimits: a 100 MB body, and a small gzip body that inflates to
// 64 MiB, are refused with resource_exhausted, and the daemon does not allocate
// their size.
func TestHTTPBodyLimits(t *testing.T) {
	_, url := httpDaemon(t, nil)
	gz := &bytes.Buffer{}
	zw, _ := gzip.NewWriterLevel(gz, gzip.BestSpeed)
	zw.Write([]byte("{}"))
	io.Copy(zw, io.LimitReader(spaces{}, 64<<20))
	zw.Close()
	for _, c := range []struct {
		name string
		body func() io.Reader
		enc  string
	}{
		{"100 MB of JSON", func() io.Reader {
			return io.MultiReader(strings.NewReader("{"), io.LimitReader(spaces{}, 100<<20), strings.NewReader("}"))
		}, ""},
		{fmt.Sprintf("%d KiB of gzip inflating to 64 MiB", gz.Len()>>10), func() io.Reader { return bytes.NewReader(gz.Bytes()) }, "gzip"},
	} {
		runtime.GC()
		before := allocated()
		req, _ := http.NewRequest("POST", url+salusv1connect.AdminServiceGetStatsProcedure, c.body())
		req.Header.Set("Content-Type", "application/json")
		if c.enc != "" {
			req.Header.Set("Content-Encoding", c.enc)
		}
		resp, err := http.DefaultClient.Do(req)
		grew := allocated() - before
		if err != nil {
			t.Errorf("%s: %v, want an error reply", c.name, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("%s: HTTP %d %s; %d MiB allocated meanwhile", c.name, resp.StatusCode, bytes.TrimSpace(body), grew>>20)
		if resp.StatusCode == 200 || !bytes.Contains(body, []byte("resource_exhausted")) {
			t.Errorf("%s: HTTP %d %s, want resource_exhausted", c.name, resp.StatusCode, body)
		}
		if grew > 24<<20 {
			t.Errorf("%s: the process allocated %d MiB meanwhile", c.name, grew>>20)
		}
	}
	// Compressed requests within the limit still work, with every protocol.
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	h2c := &http.Client{Transport: &http.Transport{Protocols: &p}}
	for _, opt := range [][]connect.ClientOption{{connect.WithSendGzip()}, {connect.WithGRPC(), connect.WithSendGzip()}} {
		ac := salusv1connect.NewAdminServiceClient(h2c, url, opt...)
		if _, err := ac.GetStats(context.Background(), connect.NewRequest(&salusv1.GetStatsRequest{})); err != nil {
			t.Errorf("a gzip request: %v", err)
		}
	}
}

// TestHTTPTimeouts: a request whose header or body stalls is closed after the
// timeouts, a huge header is refused, and a long call (an open waiting for
// admission) outlives them all.
func TestHTTPTimeouts(t *testing.T) {
	const to = 150 * time.Millisecond
	d, url := httpDaemon(t, func(c *server.Config) { c.HandshakeTimeout = to; c.ReadTimeout = to; c.WriteTimeout = to })
	addr := strings.TrimPrefix(url, "http://")
	for name, send := range map[string]string{
		"stalled header": "POST " + salusv1connect.AdminServiceGetStatsProcedure + " HTTP/1.1\r\nHost: x\r\n",
		"stalled body": "POST " + salusv1connect.AdminServiceGetStatsProcedure + " HTTP/1.1\r\nHost: x\r\n" +
			"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{  ",
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		t0 := time.Now()
		c.Write([]byte(send))
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		got, err := io.ReadAll(c)
		el := time.Since(t0)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Errorf("%s: connection still open after %v", name, el)
			continue
		}
		t.Logf("%s: closed after %v: %q", name, el, firstLine(got))
		if el > to+time.Second {
			t.Errorf("%s: closed after %v, want about %v", name, el, to)
		}
	}
	req, _ := http.NewRequest("POST", url+salusv1connect.AdminServiceGetStatsProcedure, strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Big", strings.Repeat("x", 100<<10))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("100 KiB header: %v %v, want 431", resp, err)
	} else {
		resp.Body.Close()
	}
	// fifo: y waits for x to leave, several timeouts long, over HTTP/1.1 (connect)
	// and HTTP/2 (gRPC).
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	h2c := &http.Client{Transport: &http.Transport{Protocols: &p}}
	for i, sc := range []salusv1connect.SchedulerServiceClient{
		salusv1connect.NewSchedulerServiceClient(http.DefaultClient, url),
		salusv1connect.NewSchedulerServiceClient(h2c, url, connect.WithGRPC()),
	} {
		x := open(t, d, fmt.Sprintf("x%d", i), 1, 1, 1)
		got := make(chan error, 1)
		go func() {
			r, err := sc.OpenSession(context.Background(), connect.NewRequest(&salusv1.OpenSessionRequest{Job: fmt.Sprintf("y%d", i), PersistentMib: 1, EphemeralMib: 1}))
			if err == nil {
				_, err = sc.CloseSession(context.Background(), connect.NewRequest(&salusv1.CloseSessionRequest{Session: r.Msg.Session, Secret: r.Msg.Secret}))
			}
			got <- err
		}()
		time.Sleep(4 * to)
		x.Close(true)
		select {
		case err := <-got:
			if err != nil {
				t.Errorf("an open that waited %v for admission: %v", 4*to, err)
			}
		case <-time.After(5 * time.Second):
			t.Error("open never answered")
		}
	}
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\r\n")
	return s
}

// TestHTTPConnectionLimit: beyond the limit, an HTTP connection is answered 503
// and closed; once one closes, requests are served again.
func TestHTTPConnectionLimit(t *testing.T) {
	d := start(t, "pack", 1000, func(c *server.Config) { c.MaxConns = 2 })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := d.NewHTTPServer()
	go hs.Serve(d.LimitListener(l))
	defer hs.Close()
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	got, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(got), "HTTP/1.1 503") || !strings.Contains(string(got), "too_many_connections") {
		t.Fatalf("third connection got %q, want 503 too_many_connections", got)
	}
	held[0].Close()
	waitFor(t, 2*time.Second, "no request served after a connection closed", func() bool {
		cl := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := cl.Get("http://" + l.Addr().String() + "/metrics")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}
