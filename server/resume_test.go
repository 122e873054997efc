package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/protocol"
	"github.com/salusgo/salus/server"
)

// testResumeToken is a resume token the tests write into journals themselves.
const testResumeToken = "7e57ab1e7e57ab1e7e57ab1e7e57ab1e7e57ab1e7e57ab1e7e57ab1e7e57ab1e"

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// crash is a daemon's death and its restart on its journal: what is on disk is
// what a kill -9 leaves (a shutdown would log every session lost); a new daemon
// reads it back and holds its sessions for a minute. It returns the new daemon
// and the journal's path.
func crash(t *testing.T, a *daemon, fileA *eventlog.Appender, path string, mod func(*server.Config)) (*daemon, string) {
	t.Helper()
	snapshot, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crashed := filepath.Join(t.TempDir(), "crashed.jsonl")
	if err := os.WriteFile(crashed, snapshot, 0o644); err != nil {
		t.Fatal(err)
	}
	a.Shutdown()
	fileA.Close()
	j, err := server.ReadJournal(crashed)
	if err != nil {
		t.Fatal(err)
	}
	b := start(t, "pack", 14000, func(c *server.Config) {
		c.Recover, c.RecoverWindow = j, time.Minute
		if mod != nil {
			mod(c)
		}
	})
	return b, crashed
}

// TestResumeNeedsTheOwnersToken: after a restart, a recovered session is given
// back only to the client that presents its resume token. Before, any open with
// resume took it (and its owner, resuming after, got refused): a stranger with
// no token or another is now refused with resume_denied, on the fast path (the
// connection closed) and the connect API alike, and the session waits for its
// owner, who takes it back. The journal holds the token's SHA-256, never the
// token.
func TestResumeNeedsTheOwnersToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.jsonl")
	a, fileA := startOnLog(t, "pack", path, time.Minute, false)
	owner := open(t, a, "victim", 100, 100, 1)
	tok := owner.ResumeToken
	if len(tok) != 64 {
		t.Fatalf("the client's resume token %q: want 64 hex digits", tok)
	}
	b, journal := crash(t, a, fileA, path, nil)
	raw, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(tok)) || !bytes.Contains(raw, []byte(`"resume_sha256":"`+sha256Hex(tok)+`"`)) {
		t.Errorf("the journal should hold the resume token's SHA-256 and never the token:\n%s", raw)
	}

	open := `{"op":"open","id":1,"version":1,"job":"victim","resume":true,"persistent_mib":100,"ephemeral_mib":100`
	for _, tc := range []struct{ name, extra, want string }{
		{"no token", "", "present the session's resume token in the field resume_token"},
		{"another token", `,"resume_token":"` + strings.Repeat("f", 64) + `"`, "not this session's"},
	} {
		c := rawConn(t, b)
		rep := c.call(open + tc.extra + "}")
		if rep["code"] != protocol.CodeResumeDenied || !strings.Contains(fmt.Sprint(rep["error"]), tc.want) {
			t.Errorf("stranger's resume with %s: %v, want code resume_denied saying %q", tc.name, rep, tc.want)
		}
		if _, closed := c.untilEOF(5 * time.Second); !closed {
			t.Errorf("stranger's resume with %s: the connection should be closed", tc.name)
		}
	}
	hs := api(t, b)
	sc := salusv1connect.NewSchedulerServiceClient(hs.Client(), hs.URL)
	_, err = sc.OpenSession(context.Background(), connect.NewRequest(&salusv1.OpenSessionRequest{Job: "victim", Resume: true, PersistentMib: 100, EphemeralMib: 100}))
	if connect.CodeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), "resume_denied") {
		t.Errorf("stranger's resume over the connect API: %v, want permission_denied (resume_denied)", err)
	}
	// The session is untouched: still recovered, waiting for its owner.
	if ss := b.Sessions(); len(ss) != 1 || ss[0].Job != "victim" || ss[0].State != "idle" {
		t.Fatalf("after the strangers: sessions %v", ss)
	}
	if _, ok := b.log.find(eventlog.Lost, "victim"); ok {
		t.Error("the strangers' resumes lost the session")
	}
	s, err := client.Open(context.Background(), b.addr, client.Options{Job: "victim", PersistentMiB: 100, EphemeralMiB: 100,
		Resume: true, ResumeToken: tok})
	if err != nil {
		t.Fatalf("the owner's resume: %v", err)
	}
	if !s.Resumed || s.ResumeToken != tok {
		t.Errorf("the owner's resume: resumed %v, token %q; want resumed, keeping its token", s.Resumed, s.ResumeToken)
	}
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	if err := s.End(0, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(true); err != nil {
		t.Fatal(err)
	}
}

// TestResumeFromAnotherUID: a session opened over the Unix socket records its
// opener's uid in the journal; a resume over the Unix socket from another uid
// is refused even with the token. A journal without a resume token (an older
// daemon's) gives its sessions back to nobody.
func TestResumeFromAnotherUID(t *testing.T) {
	j := server.NewJournal()
	j.Emit(eventlog.Event{Kind: eventlog.Run, Policy: "pack", Engine: "live", CapacityMiB: 14000})
	other := fmt.Sprint(os.Getuid() + 1000)
	j.Emit(eventlog.Event{T: 1, Kind: eventlog.Arrive, Job: "theirs", JobKind: "train", PersistentMiB: 10, EphemeralMiB: 10,
		ResumeSHA256: sha256Hex(testResumeToken), OwnerUID: other})
	j.Emit(eventlog.Event{T: 2, Kind: eventlog.Arrive, Job: "old", JobKind: "train", PersistentMiB: 10, EphemeralMiB: 10})
	d := start(t, "pack", 14000, func(c *server.Config) { c.Recover, c.RecoverWindow = j, time.Minute })
	if ss := d.Sessions(); len(ss) != 2 || ss[0].Owner != "uid "+other+" (from the journal)" {
		t.Errorf("recovered sessions %v: want theirs owned by uid %s, as the journal says", ss, other)
	}
	var e *client.Error
	_, err := client.Open(context.Background(), d.addr, client.Options{Job: "theirs", PersistentMiB: 10, EphemeralMiB: 10, Resume: true, ResumeToken: testResumeToken})
	if !errors.As(err, &e) || e.Code != protocol.CodeResumeDenied || !strings.Contains(err.Error(), "opened by uid "+other) || !client.Ended(err) {
		t.Errorf("resume from uid %d of a session of uid %s: %v, want resume_denied naming both", os.Getuid(), other, err)
	}
	_, err = client.Open(context.Background(), d.addr, client.Options{Job: "old", PersistentMiB: 10, EphemeralMiB: 10, Resume: true, ResumeToken: testResumeToken})
	if !errors.As(err, &e) || e.Code != protocol.CodeResumeDenied || !strings.Contains(err.Error(), "holds no resume token") {
		t.Errorf("resume of a session journaled without a token: %v, want resume_denied", err)
	}
	if len(d.Sessions()) != 2 {
		t.Errorf("refused resumes changed the sessions: %v", d.Sessions())
	}
}

// TestResumedConnectSessionIsItsResumers: a connect session resumed after a
// restart gets a fresh secret, which its later calls need; before, it had
// none, and anyone with the user token could drive or close it. Resumed over
// the API's Unix socket it shows its owner again (ListSessions).
func TestResumedConnectSessionIsItsResumers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.jsonl")
	a, fileA := startOnLog(t, "pack", path, time.Minute, false)
	hsA := api(t, a)
	scA := salusv1connect.NewSchedulerServiceClient(hsA.Client(), hsA.URL)
	ctx := context.Background()
	op, err := scA.OpenSession(ctx, connect.NewRequest(&salusv1.OpenSessionRequest{Job: "web", PersistentMib: 10, EphemeralMib: 10}))
	if err != nil {
		t.Fatal(err)
	}
	oldSecret, tok := op.Msg.Secret, op.Msg.ResumeToken
	if len(tok) != 64 || len(oldSecret) != 64 {
		t.Fatalf("open reply: secret %q, resume token %q", oldSecret, tok)
	}
	b, _ := crash(t, a, fileA, path, withTokens)

	// Resume over the API's Unix socket: the daemon sees the resumer's process.
	sock := filepath.Join(t.TempDir(), "api.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	us := b.NewHTTPServer()
	go us.Serve(l)
	t.Cleanup(func() { us.Close() })
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	local := salusv1connect.NewSchedulerServiceClient(hc, "http://salus")
	res, err := local.OpenSession(ctx, connect.NewRequest(&salusv1.OpenSessionRequest{Job: "web", Resume: true, ResumeToken: tok, PersistentMib: 10, EphemeralMib: 10}))
	if err != nil {
		t.Fatalf("the owner's resume: %v", err)
	}
	fresh := res.Msg.Secret
	if !res.Msg.Resumed || len(fresh) != 64 || fresh == oldSecret || res.Msg.ResumeToken != "" {
		t.Fatalf("resume reply %v: want resumed, a fresh secret, and no new resume token", res.Msg)
	}
	want := fmt.Sprintf("uid %d (gid %d, pid %d)", os.Getuid(), os.Getgid(), os.Getpid())
	if ss := b.Sessions(); len(ss) != 1 || ss[0].Owner != want {
		t.Errorf("sessions %v: want the resumed one owned by %s", ss, want)
	}
	// Another caller with the user token, over TCP: no secret, the old one.
	hs := api(t, b)
	stranger := salusv1connect.NewSchedulerServiceClient(hs.Client(), hs.URL, bearer(userToken))
	for _, secret := range []string{"", oldSecret} {
		if _, err := stranger.BeginIteration(ctx, connect.NewRequest(&salusv1.BeginIterationRequest{Session: "web", Secret: secret})); connect.CodeOf(err) != connect.CodePermissionDenied {
			t.Errorf("begin by a stranger with secret %q: %v, want permission_denied", secret, err)
		}
		if _, err := stranger.CloseSession(ctx, connect.NewRequest(&salusv1.CloseSessionRequest{Session: "web", Secret: secret, Lost: true})); connect.CodeOf(err) != connect.CodePermissionDenied {
			t.Errorf("close by a stranger with secret %q: %v, want permission_denied", secret, err)
		}
	}
	if ss := b.Sessions(); len(ss) != 1 || ss[0].State != "idle" {
		t.Fatalf("the strangers changed the session: %v", ss)
	}
	if _, err := local.BeginIteration(ctx, connect.NewRequest(&salusv1.BeginIterationRequest{Session: "web", Secret: fresh})); err != nil {
		t.Fatal(err)
	}
	if _, err := local.EndIteration(ctx, connect.NewRequest(&salusv1.EndIterationRequest{Session: "web", Secret: fresh})); err != nil {
		t.Fatal(err)
	}
	if _, err := local.CloseSession(ctx, connect.NewRequest(&salusv1.CloseSessionRequest{Session: "web", Secret: fresh})); err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); st.Finished != 1 || st.Lost != 0 {
		t.Errorf("stats %+v: want the resumed session finished by its owner", st)
	}
}

// TestResumeTokenChosenByTheClient: a fresh open may bring its own resume token
// (so that a client whose daemon died before answering can still resume); one
// too short to be secret is refused.
func TestResumeTokenChosenByTheClient(t *testing.T) {
	d := start(t, "pack", 14000, nil)
	c := rawConn(t, d)
	if rep := c.call(`{"op":"open","id":1,"version":1,"job":"x","persistent_mib":1,"ephemeral_mib":1,"resume_token":"short"}`); rep["code"] != protocol.CodeBadRequest || !strings.Contains(fmt.Sprint(rep["error"]), "resume_token") {
		t.Errorf("a short resume token: %v, want bad_request naming the field", rep)
	}
	if rep := c.call(`{"op":"open","id":2,"version":1,"job":"x","persistent_mib":1,"ephemeral_mib":1,"resume_token":"` + testResumeToken + `"}`); rep["ok"] != true || rep["resume_token"] != testResumeToken {
		t.Errorf("the client's resume token: %v, want it given back", rep)
	}
	e, _ := d.log.find(eventlog.Arrive, "x")
	if e.ResumeSHA256 != sha256Hex(testResumeToken) || e.OwnerUID != fmt.Sprint(os.Getuid()) {
		t.Errorf("arrive event %+v: want the token's SHA-256 and the opener's uid", e)
	}
}
