package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	salusv1 "github.com/salusgo/salus/api/salus/v1"
	"github.com/salusgo/salus/api/salus/v1/salusv1connect"
	"github.com/salusgo/salus/server"
)

// Tests of the connection slots (conns.go), each of which failed on the daemon
// before them. Every test connection comes from the test's own uid: the
// per-user accounting sees other uids through server.FakePeer, which gives the
// connections of one socket another identity.

// listenAs serves d's fast path on a new Unix socket whose connections come, as
// far as the daemon knows, from uid.
func listenAs(t *testing.T, d *daemon, uid uint32) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), fmt.Sprintf("uid%d.sock", uid))
	server.FakePeer(t, sock, server.Peer{UID: uid, GID: uid, PID: 1})
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go d.ServeFast(l) // returns at Shutdown, in start's cleanup
	return sock
}

func dialRaw(t *testing.T, sock string) *raw {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &raw{t, c}
}

func openRaw(t *testing.T, sock, job string) *raw {
	t.Helper()
	r := dialRaw(t, sock)
	if rep := r.call(fmt.Sprintf(`{"op":"open","id":1,"version":1,"job":%q,"persistent_mib":1,"ephemeral_mib":1}`, job)); rep["ok"] != true {
		t.Fatalf("open %s: %v", job, rep)
	}
	return r
}

// iterate runs one iteration on r's session (ids from id).
func iterate(t *testing.T, r *raw, id int) {
	t.Helper()
	if rep := r.call(fmt.Sprintf(`{"op":"begin","id":%d}`, id)); rep["ok"] != true {
		t.Fatalf("begin: %v", rep)
	}
	if rep := r.call(fmt.Sprintf(`{"op":"end","id":%d}`, id+1)); rep["ok"] != true {
		t.Fatalf("end: %v", rep)
	}
}

// refusedWith reads the frame r was refused with and the end of the stream: a
// refusal is a frame, never a bare close or reset.
func refusedWith(t *testing.T, r *raw, code, says string) {
	t.Helper()
	rep := r.readFrame()
	if rep["code"] != code || !strings.Contains(fmt.Sprint(rep["error"]), says) {
		t.Fatalf("refused with %v, want code %s saying %q", rep, code, says)
	}
	if rep := r.readFrame(); rep["eof"] == nil {
		t.Fatalf("after the refusal: %v, want the connection closed", rep)
	}
}

// TestOneUserCannotTakeEverySlot: uid A at its share of the slots is refused with
// a frame while uid B is served; idle connections (no session) of uid C give their
// slots to its newer ones and, once the daemon is full, to B's; sessions already
// open keep iterating throughout; with every slot carrying a session, a new
// connection is refused with a frame.
func TestOneUserCannotTakeEverySlot(t *testing.T) {
	d := start(t, "pack", 1e6, func(c *server.Config) {
		c.MaxConns, c.MaxConnsPerUser = 12, 4
		c.HandshakeTimeout = time.Hour // idle connections stay unless the limits close them
	})
	a, b, cc := listenAs(t, d, 1001), listenAs(t, d, 1002), listenAs(t, d, 1003)
	early := openRaw(t, b, "b-early") // a session open before it all
	iterate(t, early, 2)

	for i := range 4 {
		openRaw(t, a, fmt.Sprintf("a%d", i))
	}
	refusedWith(t, dialRaw(t, a), "too_many_connections", "uid 1001: 4 connections open, the most one user may hold")
	iterate(t, openRaw(t, b, "b1"), 2) // another uid is served
	iterate(t, early, 4)

	// uid C floods idle connections: each beyond its share closes its oldest
	// idle one, which is told why.
	var idle []*raw
	for range 10 {
		idle = append(idle, dialRaw(t, cc))
	}
	for _, r := range idle[:6] {
		refusedWith(t, r, "too_many_connections", "uid 1003: 4 connections open, the most one user may hold")
	}
	waitFor(t, 5*time.Second, "6 sessions and uid 1003's 4 idle connections", func() bool { return d.FastConns() == [2]int{6, 4} })
	iterate(t, early, 6)

	// 6 sessions and 4 idle connections: 10 of the 12 slots. uid D and B take
	// the last two; then each new session takes the slot of the oldest idle
	// connection.
	dd := listenAs(t, d, 1004)
	openRaw(t, dd, "d0")
	openRaw(t, b, "b2")
	for i, r := range idle[6:9] {
		openRaw(t, dd, fmt.Sprint("d", i+1))
		refusedWith(t, r, "too_many_connections", "the daemon serves 12 connections, its limit")
	}
	iterate(t, openRaw(t, b, "b3"), 2)
	refusedWith(t, idle[9], "too_many_connections", "the daemon serves 12 connections, its limit")
	// Every slot carries a session: a new connection is refused, with a frame.
	refusedWith(t, dialRaw(t, listenAs(t, d, 1005)), "too_many_connections", "the daemon serves 12 connections, its limit")
	iterate(t, early, 8)
	if got := d.FastConns(); got != [2]int{12, 0} {
		t.Errorf("sessions and idle connections %v, want 12 and 0", got)
	}
	if st := d.Stats(); st.Lost != 0 {
		t.Errorf("no session may be lost to the limits: %+v", st)
	}
}

// TestTCPConnectionsCountPerToken: over TCP the share is the token's: the third
// open with the user token is refused (its connection closed with the reason)
// while the admin token's and the Unix socket's are served.
func TestTCPConnectionsCountPerToken(t *testing.T) {
	d := start(t, "pack", 1e6, func(c *server.Config) {
		withTokens(c)
		c.MaxConns, c.MaxConnsPerUser = 16, 2
	})
	addr := tcpFast(t, d)
	openTCP := func(job, tok string) map[string]any {
		return rawTCP(t, addr).call(fmt.Sprintf(`{"op":"open","id":1,"version":1,"job":%q,"persistent_mib":1,"ephemeral_mib":1,"token":%q}`, job, tok))
	}
	for i := range 2 {
		if rep := openTCP(fmt.Sprint("u", i), userToken); rep["ok"] != true {
			t.Fatal(rep)
		}
	}
	r := rawTCP(t, addr)
	r.sendBytes(frame(fmt.Sprintf(`{"op":"open","id":1,"version":1,"job":"u2","persistent_mib":1,"ephemeral_mib":1,"token":%q}`, userToken)))
	refusedWith(t, r, "too_many_connections", "the TCP clients of the daemon's token: 2 connections open, the most one user may hold")
	if rep := openTCP("admin", adminToken); rep["ok"] != true {
		t.Errorf("the admin token's own share: %v", rep)
	}
	iterate(t, openRaw(t, strings.TrimPrefix(d.addr, "unix:"), "local"), 2)
}

// TestReservedSlotsForResumedSessions: a daemon that can recover keeps its last
// slots for the sessions clients resume: a new session may not take them, a
// resume may.
func TestReservedSlotsForResumedSessions(t *testing.T) {
	d := start(t, "pack", 1e6, func(c *server.Config) {
		c.MaxConns, c.MaxConnsPerUser, c.ReservedConns, c.RecoverWindow = 4, -1, 1, time.Minute
	})
	sock := strings.TrimPrefix(d.addr, "unix:")
	for i := range 3 {
		openRaw(t, sock, fmt.Sprint("j", i))
	}
	r := dialRaw(t, sock)
	r.sendBytes(frame(`{"op":"open","id":1,"version":1,"job":"new","persistent_mib":1,"ephemeral_mib":1}`))
	refusedWith(t, r, "too_many_connections", "kept for the sessions its clients resume")
	// A resume passes the reservation (this daemon has nothing to resume: the
	// answer is the core's, code lost, not the limit's).
	if rep := dialRaw(t, sock).call(`{"op":"open","id":1,"version":1,"job":"back","persistent_mib":1,"ephemeral_mib":1,"resume":true}`); rep["code"] != "lost" {
		t.Errorf("resume: %v, want code lost (past the reservation)", rep)
	}
}

// TestRefusalsBeyondTheLingerCapGetAFrame: more refused connections at once than
// the daemon lingers on (64), each having sent its open and reading nothing
// until all were refused: every one gets its refusal frame (beyond 64 they used
// to be closed without a word, which clients read as a crash).
func TestRefusalsBeyondTheLingerCapGetAFrame(t *testing.T) {
	d := start(t, "pack", 1e6, func(c *server.Config) { c.MaxConns = 1 })
	sock := strings.TrimPrefix(d.addr, "unix:")
	holder := openRaw(t, sock, "holder")
	const n = 150
	refused := make([]*raw, n)
	for i := range refused {
		refused[i] = dialRaw(t, sock)
		// The daemon may have refused this connection and shut its side before the
		// open is written (on a loaded machine the test writes late): the write
		// then fails, and the refusal frame is still there to read.
		refused[i].c.Write(frame(fmt.Sprintf(`{"op":"open","id":1,"version":1,"job":"r%d","persistent_mib":1,"ephemeral_mib":1}`, i)))
	}
	for i, r := range refused {
		if rep := r.readFrame(); rep["code"] != "too_many_connections" {
			t.Fatalf("connection %d of %d: %v, want its too_many_connections frame", i+1, n, rep)
		}
	}
	iterate(t, holder, 2)
}

// TestAdminSocketKnowsItsUID: with the default limits (the HTTP API behind
// LimitListener, as salus serve runs it), the connect API's Unix socket takes
// the daemon's own uid and root for admins, without a token, and another uid
// for a user. Behind the limit's wrapper it used to see no Unix peer at all.
func TestAdminSocketKnowsItsUID(t *testing.T) {
	d := start(t, "pack", 1000, withTokens)
	open(t, d, "job", 1, 1, 1)
	serveAPI := func(fake *server.Peer) salusv1connect.AdminServiceClient {
		sock := filepath.Join(t.TempDir(), "api.sock")
		if fake != nil {
			server.FakePeer(t, sock, *fake)
		}
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		hs := d.NewHTTPServer()
		go hs.Serve(d.LimitListener(l))
		t.Cleanup(func() { hs.Close() })
		hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
		return salusv1connect.NewAdminServiceClient(hc, "http://salus")
	}
	ctx := context.Background()
	list := func(c salusv1connect.AdminServiceClient) error {
		_, err := c.ListSessions(ctx, connect.NewRequest(&salusv1.ListSessionsRequest{}))
		return err
	}
	if err := list(serveAPI(nil)); err != nil {
		t.Errorf("the daemon's own uid (%d) over the API socket: %v", os.Getuid(), err)
	}
	if err := list(serveAPI(&server.Peer{UID: 0, GID: 0, PID: 1})); err != nil {
		t.Errorf("root over the API socket: %v", err)
	}
	other := uint32(os.Getuid()) + 4242
	if err := list(serveAPI(&server.Peer{UID: other, GID: other, PID: 1})); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("uid %d over the API socket: %v, want permission denied", other, err)
	}
}

// TestHTTPConnectionsPerUID: the HTTP API's Unix socket bounds one uid's
// connections too: uid A's second is answered 503 too_many_connections while
// uid B is served, and A's first still works.
func TestHTTPConnectionsPerUID(t *testing.T) {
	d := start(t, "pack", 1000, func(c *server.Config) { c.MaxConns, c.MaxConnsPerUser = 8, 1 })
	serveAs := func(uid uint32) string {
		sock := filepath.Join(t.TempDir(), "api.sock")
		server.FakePeer(t, sock, server.Peer{UID: uid, GID: uid, PID: 1})
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		hs := d.NewHTTPServer()
		go hs.Serve(d.LimitListener(l))
		t.Cleanup(func() { hs.Close() })
		return sock
	}
	readers := map[net.Conn]*bufio.Reader{}
	var body []byte
	get := func(c net.Conn) string { // one request on c; its status line (body: its body)
		t.Helper()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("GET /metrics HTTP/1.1\r\nHost: salus\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		if readers[c] == nil {
			readers[c] = bufio.NewReader(c)
		}
		res, err := http.ReadResponse(readers[c], nil)
		if err != nil {
			return err.Error()
		}
		body, _ = io.ReadAll(res.Body)
		res.Body.Close()
		return res.Proto + " " + res.Status
	}
	a, b := serveAs(5000), serveAs(5001)
	first := dialRaw(t, a).c
	if rep := get(first); !strings.HasPrefix(rep, "HTTP/1.1 200") {
		t.Fatalf("uid 5000's first connection: %q", rep)
	}
	second := dialRaw(t, a).c
	second.SetDeadline(time.Now().Add(5 * time.Second))
	rep, _ := io.ReadAll(second)
	if !strings.HasPrefix(string(rep), "HTTP/1.1 503") || !strings.Contains(string(rep), "too_many_connections: uid 5000: 1 HTTP connections open") {
		t.Errorf("uid 5000's second connection: %q, want 503 too_many_connections naming the uid", rep)
	}
	if rep := get(dialRaw(t, b).c); !strings.HasPrefix(rep, "HTTP/1.1 200") {
		t.Errorf("uid 5001: %q, want served", rep)
	}
	if rep := get(first); !strings.HasPrefix(rep, "HTTP/1.1 200") {
		t.Errorf("uid 5000's first connection, again: %q", rep)
	}
	if want := `salus_connections_refused_total{reason="http_per_user"} 1`; !strings.Contains(string(body), want) {
		t.Errorf("/metrics lacks %s", want)
	}
}
