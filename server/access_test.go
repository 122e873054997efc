package server_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	salusv1 "github.com/salusgo/salus/api/salus/v1"
	"github.com/salusgo/salus/api/salus/v1/salusv1connect"
	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/server"
)

const (
	userToken  = "user-token-for-tests"
	adminToken = "admin-token-for-tests"
)

func withTokens(c *server.Config) {
	c.Token, c.AdminToken, c.TokenFile = userToken, adminToken, "/run/salus/token"
}

// bearer makes a connect client present tok.
func bearer(tok string) connect.ClientOption {
	return connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			if tok != "" {
				req.Header().Set("Authorization", "Bearer "+tok)
			}
			return next(ctx, req)
		}
	}))
}

// api serves d's connect API over TCP.
func api(t *testing.T, d *daemon) *httptest.Server {
	t.Helper()
	hs := httptest.NewUnstartedServer(d.Handler())
	hs.EnableHTTP2 = true
	hs.Start()
	t.Cleanup(hs.Close)
	return hs
}

// tcpFast serves d's fast path on a TCP port too and returns its address.
func tcpFast(t *testing.T, d *daemon) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go d.ServeFast(l) // returns at Shutdown, in start's cleanup
	return l.Addr().String()
}

func rawTCP(t *testing.T, addr string) *raw {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &raw{t, c}
}

// TestTCPOpenNeedsToken: over TCP an open without the daemon's token, or with
// another, is refused with code unauthorized and a sentence saying where the token
// is; with it (or the admin token) it is admitted. The Unix socket needs none.
func TestTCPOpenNeedsToken(t *testing.T) {
	d := start(t, "pack", 1000, withTokens)
	addr := tcpFast(t, d)
	for _, tc := range []struct{ name, token string }{{"no token", ""}, {"wrong token", "guess"}} {
		c := rawTCP(t, addr)
		body := `{"op":"open","id":1,"version":1,"job":"x","persistent_mib":1,"ephemeral_mib":1`
		if tc.token != "" {
			body += `,"token":"` + tc.token + `"`
		}
		rep := c.call(body + "}")
		if rep["ok"] != false || rep["code"] != "unauthorized" || !strings.Contains(fmt.Sprint(rep["error"]), "/run/salus/token") {
			t.Errorf("%s: %v, want code unauthorized naming the token file", tc.name, rep)
		}
		if rep := c.readFrame(); rep["eof"] == nil {
			t.Errorf("%s: the connection should be closed, got %v", tc.name, rep)
		}
	}
	if _, err := client.Open(context.Background(), addr, client.Options{Job: "y", PersistentMiB: 1, EphemeralMiB: 1}); !client.Ended(err) || !strings.Contains(err.Error(), "unauthorized") {
		t.Errorf("Go client without a token: %v", err)
	}
	s, err := client.Open(context.Background(), addr, client.Options{Job: "y", PersistentMiB: 1, EphemeralMiB: 1, Token: userToken})
	if err != nil {
		t.Fatalf("with the token: %v", err)
	}
	s.Close(true)
	file := filepath.Join(t.TempDir(), "admin")
	os.WriteFile(file, []byte(adminToken+"\n"), 0o600)
	s, err = client.Open(context.Background(), addr, client.Options{Job: "z", PersistentMiB: 1, EphemeralMiB: 1, TokenFile: file})
	if err != nil {
		t.Fatalf("with the admin token from a file: %v", err)
	}
	s.Close(true)
	t.Setenv(client.EnvToken, userToken)
	s, err = client.Open(context.Background(), addr, client.Options{Job: "w", PersistentMiB: 1, EphemeralMiB: 1})
	if err != nil {
		t.Fatalf("with $SALUS_TOKEN: %v", err)
	}
	s.Close(true)
	open(t, d, "unix", 1, 1, 1).Close(true) // the Unix socket: no token
	if st := d.Stats(); st.Finished != 4 || st.Sessions != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestConnectNeedsBearer: the connect API refuses calls without the daemon's token.
func TestConnectNeedsBearer(t *testing.T) {
	d := start(t, "pack", 1000, withTokens)
	hs := api(t, d)
	ctx := context.Background()
	for _, tok := range []string{"", "guess"} {
		sc := salusv1connect.NewSchedulerServiceClient(hs.Client(), hs.URL, bearer(tok))
		_, err := sc.OpenSession(ctx, connect.NewRequest(&salusv1.OpenSessionRequest{Job: "x", PersistentMib: 1, EphemeralMib: 1}))
		if connect.CodeOf(err) != connect.CodeUnauthenticated || !strings.Contains(err.Error(), "token") {
			t.Errorf("OpenSession with token %q: %v, want unauthenticated", tok, err)
		}
		ac := salusv1connect.NewAdminServiceClient(hs.Client(), hs.URL, bearer(tok))
		if _, err := ac.GetStats(ctx, connect.NewRequest(&salusv1.GetStatsRequest{})); connect.CodeOf(err) != connect.CodeUnauthenticated {
			t.Errorf("GetStats with token %q: %v, want unauthenticated", tok, err)
		}
	}
	if len(d.Sessions()) != 0 {
		t.Errorf("a refused call opened a session: %v", d.Sessions())
	}
	sc := salusv1connect.NewSchedulerServiceClient(hs.Client(), hs.URL, bearer(userToken))
	op, err := sc.OpenSession(ctx, connect.NewRequest(&salusv1.OpenSessionRequest{Job: "x", PersistentMib: 1, EphemeralMib: 1}))
	if err != nil {
		t.Fatal(err)
	}
	if len(op.Msg.Secret) < 32 {
		t.Errorf("session secret %q: want a long random one", op.Msg.Secret)
	}
}

// TestConnectSessionBelongsToItsOpener: another caller, even one with the token,
// cannot begin, end, heartbeat or close a session it did not open.
func TestConnectSessionBelongsToItsOpener(t *testing.T) {
	d := start(t, "pack", 1000, withTokens)
	hs := api(t, d)
	ctx := context.Background()
	sc := salusv1connect.NewSchedulerServiceClient(hs.Client(), hs.URL, bearer(userToken))
	op, err := sc.OpenSession(ctx, connect.NewRequest(&salusv1.OpenSessionRequest{Job: "mine", PersistentMib: 1, EphemeralMib: 1}))
	if err != nil {
		t.Fatal(err)
	}
	mine := op.Msg.Secret
	if _, err := sc.BeginIteration(ctx, connect.NewRequest(&salusv1.BeginIterationRequest{Session: "mine", Secret: mine})); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"", "not-the-secret"} {
		calls := map[string]func() error{
			"EndIteration": func() error {
				_, err := sc.EndIteration(ctx, connect.NewRequest(&salusv1.EndIterationRequest{Session: "mine", Secret: secret}))
				return err
			},
			"Heartbeat": func() error {
				_, err := sc.Heartbeat(ctx, connect.NewRequest(&salusv1.HeartbeatRequest{Session: "mine", Secret: secret}))
				return err
			},
			"CloseSession": func() error {
				_, err := sc.CloseSession(ctx, connect.NewRequest(&salusv1.CloseSessionRequest{Session: "mine", Secret: secret, Lost: true}))
				return err
			},
			"BeginIteration": func() error {
				_, err := sc.BeginIteration(ctx, connect.NewRequest(&salusv1.BeginIterationRequest{Session: "mine", Secret: secret}))
				return err
			},
		}
		for name, call := range calls {
			if err := call(); connect.CodeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), "secret") {
				t.Errorf("%s by a stranger (secret %q): %v, want permission denied", name, secret, err)
			}
		}
	}
	ss := d.Sessions()
	if len(ss) != 1 || ss[0].State != "running" {
		t.Fatalf("the strangers changed the session: %v", ss)
	}
	if _, err := sc.EndIteration(ctx, connect.NewRequest(&salusv1.EndIterationRequest{Session: "mine", Secret: mine})); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.CloseSession(ctx, connect.NewRequest(&salusv1.CloseSessionRequest{Session: "mine", Secret: mine})); err != nil {
		t.Fatal(err)
	}
	if st := d.Stats(); st.Finished != 1 || st.Lost != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestAdminCallsNeedAdmin: listing sessions, evicting and draining need the admin
// token over TCP (the user token is not enough), or the daemon's uid over a Unix
// socket.
func TestAdminCallsNeedAdmin(t *testing.T) {
	d := start(t, "pack", 1000, withTokens)
	hs := api(t, d)
	ctx := context.Background()
	open(t, d, "job", 1, 1, 1)
	type call func(salusv1connect.AdminServiceClient) error
	calls := map[string]call{
		"ListSessions": func(c salusv1connect.AdminServiceClient) error {
			_, err := c.ListSessions(ctx, connect.NewRequest(&salusv1.ListSessionsRequest{}))
			return err
		},
		"Drain": func(c salusv1connect.AdminServiceClient) error {
			_, err := c.Drain(ctx, connect.NewRequest(&salusv1.DrainRequest{Resume: true}))
			return err
		},
		"EvictSession": func(c salusv1connect.AdminServiceClient) error {
			_, err := c.EvictSession(ctx, connect.NewRequest(&salusv1.EvictSessionRequest{Job: "nobody"}))
			return err
		},
	}
	for tok, want := range map[string]connect.Code{"": connect.CodeUnauthenticated, userToken: connect.CodePermissionDenied} {
		ac := salusv1connect.NewAdminServiceClient(hs.Client(), hs.URL, bearer(tok))
		for name, c := range calls {
			if err := c(ac); connect.CodeOf(err) != want {
				t.Errorf("%s with token %q: %v, want %v", name, tok, err, want)
			}
		}
	}
	admin := salusv1connect.NewAdminServiceClient(hs.Client(), hs.URL, bearer(adminToken))
	for name, c := range calls {
		err := c(admin)
		if name == "EvictSession" && connect.CodeOf(err) == connect.CodeNotFound {
			continue // allowed; there is no such job
		}
		if err != nil {
			t.Errorf("%s with the admin token: %v", name, err)
		}
	}
	// Over a Unix socket the daemon's own uid is an admin without a token, and
	// the session shows its opener's uid and pid (SO_PEERCRED).
	sock := filepath.Join(t.TempDir(), "api.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	us := d.NewHTTPServer()
	go us.Serve(l)
	t.Cleanup(func() { us.Close() })
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	local := salusv1connect.NewAdminServiceClient(hc, "http://salus")
	res, err := local.ListSessions(ctx, connect.NewRequest(&salusv1.ListSessionsRequest{}))
	if err != nil {
		t.Fatalf("ListSessions as the daemon's uid over a Unix socket: %v", err)
	}
	want := fmt.Sprintf("uid %d (gid %d, pid %d)", os.Getuid(), os.Getgid(), os.Getpid())
	if len(res.Msg.Sessions) != 1 || res.Msg.Sessions[0].Owner != want {
		t.Errorf("sessions %v: want one owned by %s", res.Msg.Sessions, want)
	}
}

// TestEvictReturnsMemoryAndTellsTheClient: an evicted job's memory goes to the
// job waiting for it, its client is told with code evicted, and the log says who.
func TestEvictReturnsMemoryAndTellsTheClient(t *testing.T) {
	d := start(t, "pack", 1000, withTokens)
	a := rawConn(t, d)
	if r := a.call(`{"op":"open","id":1,"version":1,"job":"a","persistent_mib":400,"ephemeral_mib":300}`); r["ok"] != true {
		t.Fatal(r)
	}
	admitted := make(chan error, 1)
	go func() {
		b, err := client.Open(context.Background(), d.addr, client.Options{Job: "b", PersistentMiB: 400, EphemeralMiB: 300})
		if err == nil {
			b.Close(true)
		}
		admitted <- err
	}()
	waitFor(t, 5*time.Second, "b waits for memory", func() bool { return len(d.Sessions()) == 2 })
	hs := api(t, d)
	admin := salusv1connect.NewAdminServiceClient(hs.Client(), hs.URL, bearer(adminToken))
	res, err := admin.EvictSession(context.Background(), connect.NewRequest(&salusv1.EvictSessionRequest{Job: "a", Reason: "hogging"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := "evicted by the admin token's holder: hogging"; res.Msg.Reason != want {
		t.Errorf("reason %q, want %q", res.Msg.Reason, want)
	}
	if rep := a.readFrame(); rep["code"] != "evicted" || !strings.Contains(fmt.Sprint(rep["error"]), "evicted by") {
		t.Errorf("a's client was told %v, want code evicted", rep)
	}
	select {
	case err := <-admitted:
		if err != nil {
			t.Fatalf("b: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("b not admitted into a's memory")
	}
	if e, ok := d.log.find(eventlog.Lost, "a"); !ok || e.Reason != "evicted by the admin token's holder: hogging" {
		t.Errorf("lost event %+v %v", e, ok)
	}
	if _, err := admin.EvictSession(context.Background(), connect.NewRequest(&salusv1.EvictSessionRequest{Job: "a"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("evicting a job with no session: %v", err)
	}
}

// TestEvictTellsAWaitingClient: a Go client waiting for its grant gets code evicted.
func TestEvictTellsAWaitingClient(t *testing.T) {
	d := start(t, "fair", 1000, nil)
	a := open(t, d, "a", 10, 10, 1)
	b := open(t, d, "b", 10, 10, 1)
	if err := a.Begin(); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- b.Begin() }()
	waitFor(t, 5*time.Second, "b ready", func() bool { return state(d, "b") == "ready" })
	if _, err := d.Evict("b", "uid 0", ""); err != nil {
		t.Fatal(err)
	}
	var e *client.Error
	if err := <-got; !errors.As(err, &e) || e.Code != "evicted" || !client.Ended(err) {
		t.Errorf("b's begin: %v, want code evicted", err)
	}
	a.End(0, 0)
	a.Close(true)
}

// TestDrainRefusesOpens: a draining daemon refuses new opens and the jobs waiting
// for admission with code draining; admitted jobs carry on; GetStats shows it.
func TestDrainRefusesOpens(t *testing.T) {
	d := start(t, "pack", 1000, withTokens)
	a := open(t, d, "a", 400, 300, 1)
	waiting := make(chan error, 1)
	go func() {
		_, err := client.Open(context.Background(), d.addr, client.Options{Job: "b", PersistentMiB: 400, EphemeralMiB: 300})
		waiting <- err
	}()
	waitFor(t, 5*time.Second, "b waits for memory", func() bool { return len(d.Sessions()) == 2 })
	hs := api(t, d)
	admin := salusv1connect.NewAdminServiceClient(hs.Client(), hs.URL, bearer(adminToken))
	res, err := admin.Drain(context.Background(), connect.NewRequest(&salusv1.DrainRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Msg.Draining || res.Msg.Refused != 1 || res.Msg.Sessions != 1 {
		t.Errorf("drain %v", res.Msg)
	}
	var e *client.Error
	if err := <-waiting; !errors.As(err, &e) || e.Code != "draining" {
		t.Errorf("waiting open: %v, want code draining", err)
	}
	c := rawConn(t, d)
	if rep := c.call(`{"op":"open","id":1,"version":1,"job":"c","persistent_mib":1,"ephemeral_mib":1}`); rep["code"] != "draining" {
		t.Errorf("open while draining: %v", rep)
	}
	users := salusv1connect.NewAdminServiceClient(hs.Client(), hs.URL, bearer(userToken))
	if st, err := users.GetStats(context.Background(), connect.NewRequest(&salusv1.GetStatsRequest{})); err != nil || !st.Msg.Draining {
		t.Errorf("stats while draining: %v %v", st, err)
	}
	for range 3 { // the admitted job carries on
		if err := a.Begin(); err != nil {
			t.Fatal(err)
		}
		if err := a.End(0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(true); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Drain(context.Background(), connect.NewRequest(&salusv1.DrainRequest{Resume: true})); err != nil {
		t.Fatal(err)
	}
	open(t, d, "after", 1, 1, 1).Close(true)
}

func state(d *daemon, job string) string {
	for _, s := range d.Sessions() {
		if s.Job == job {
			return s.State
		}
	}
	return "gone"
}
