package server_test

import (
	"context"
	"errors"
	"fmt"
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

// Claim secrets of the tests: what the DRA driver would make (64 hex digits).
const (
	secretA = "a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0"
	secretB = "b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1"
)

// A claim's session goes to the claim's GPU though least-loaded would put it on
// the other, must fit in the claim's memory, and ends when the claim is released.
func TestClaimPinsSessionToItsGPU(t *testing.T) {
	d := start(t, "pack", 14000, twoGPUs(""))
	ctx := context.Background()
	if _, err := d.ReserveClaim("uid-a", "ns/a", 2, 6000, secretA); err != nil {
		t.Fatal(err)
	}
	// A job without a claim takes physical GPU 2 (least loaded, first by index).
	free, err := client.Open(ctx, d.addr, client.Options{Job: "free", PersistentMiB: 500, EphemeralMiB: 500, DeclaredS: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer free.Close(true)
	if free.GPUs[0] != 2 {
		t.Fatalf("the unclaimed job went to GPU %v, want 2", free.GPUs)
	}
	// Least-loaded would now choose GPU 5; the claim is on GPU 2.
	s, err := client.Open(ctx, d.addr, client.Options{Job: "claimed", PersistentMiB: 2000, EphemeralMiB: 3000, DeclaredS: 1, Claim: "uid-a", ClaimSecret: secretA})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.GPUs) != 1 || s.GPUs[0] != 2 {
		t.Fatalf("the claimed job went to GPU %v, want the claim's GPU 2", s.GPUs)
	}
	// Pack would pad its lane to (1.1 x 2000 + 3000) x 1.05 = 5460 MiB; the claim
	// holds 6000, so the padding stands. A tighter claim caps it below.
	if s.LaneMiB != 5460 {
		t.Errorf("the claimed job's lane is %v MiB, want pack's 5460 within the claim's 6000", s.LaneMiB)
	}
	made, err := d.ReserveClaim("uid-tight", "ns/tight", 5, 5100, "")
	if err != nil || len(made.Secret) != 64 {
		t.Fatalf("reserve without a secret = %+v, %v; want one made (64 hex digits)", made, err)
	}
	tight, err := client.Open(ctx, d.addr, client.Options{Job: "tight", PersistentMiB: 2000, EphemeralMiB: 3000, DeclaredS: 1, Claim: "uid-tight", ClaimSecret: made.Secret})
	if err != nil {
		t.Fatal(err)
	}
	defer tight.Close(true)
	if tight.LaneMiB != 5100 {
		t.Errorf("the job of a 5100 MiB claim got a lane of %v MiB: pack's padding should stop at the claim", tight.LaneMiB)
	}
	// One session at a time per claim.
	if _, err := client.Open(ctx, d.addr, client.Options{Job: "second", PersistentMiB: 10, EphemeralMiB: 10, DeclaredS: 1, Claim: "uid-a", ClaimSecret: secretA}); err == nil || !strings.Contains(err.Error(), `already has session "claimed"`) {
		t.Errorf("a second session on the claim: %v", err)
	}
	existed, ended, err := d.ReleaseClaim("uid-a")
	if err != nil || !existed || ended != "claimed" {
		t.Fatalf("release = %v, %q, %v; want true, claimed, nil", existed, ended, err)
	}
	var e *client.Error
	if err := s.Begin(); !errors.As(err, &e) || e.Code != protocol.CodeEvicted || !strings.Contains(err.Error(), "claim ns/a (uid-a) released") {
		t.Errorf("begin after the claim's release: %v, want code evicted naming the claim", err)
	}
	// Released twice: no error, nothing existed.
	if existed, _, err := d.ReleaseClaim("uid-a"); err != nil || existed {
		t.Errorf("second release = %v, %v; want false, nil", existed, err)
	}
	// Without the claim the job cannot open under it.
	if _, err := client.Open(ctx, d.addr, client.Options{Job: "late", PersistentMiB: 10, EphemeralMiB: 10, DeclaredS: 1, Claim: "uid-a", ClaimSecret: secretA}); err == nil || !strings.Contains(err.Error(), "not reserved") {
		t.Errorf("open under a released claim: %v", err)
	}
}

// Reservations are checked against the GPU, each other and themselves; a retry
// of the same reservation is a no-op.
func TestReserveClaimChecks(t *testing.T) {
	d := start(t, "pack", 14000, twoGPUs(""))
	ctx := context.Background()
	r, err := d.ReserveClaim("uid-1", "ns/one", 5, 8000, "")
	if err != nil || r.Existed || r.GPUFreeMiB != 6000 {
		t.Fatalf("reserve = %+v, %v; want 6000 MiB left, new", r, err)
	}
	if r, err := d.ReserveClaim("uid-1", "ns/one", 5, 8000, ""); err != nil || !r.Existed {
		t.Errorf("the kubelet's retry: %+v, %v; want existed", r, err)
	}
	for _, c := range []struct {
		uid  string
		gpu  int
		mib  float64
		want string
	}{
		{"uid-2", 5, 20000, "which has 14000 MiB usable"},
		{"uid-2", 5, 7000, "its other claims hold 8000"},
		{"uid-2", 3, 100, "GPU 3 is not one this daemon drives"},
		{"uid-1", 2, 8000, "already reserved with 8000 MiB of GPU 5"},
		{"", 2, 1, "empty"},
	} {
		_, err := d.ReserveClaim(c.uid, "ns/x", c.gpu, c.mib, "")
		if err == nil || !strings.Contains(err.Error(), c.want) || server.CodeOf(err) == "" {
			t.Errorf("reserve %s %d MiB on GPU %d = %v, want an error with %q", c.uid, int(c.mib), c.gpu, err, c.want)
		}
	}
	// 0 MiB is the whole GPU.
	if r, err := d.ReserveClaim("uid-3", "ns/three", 2, 0, ""); err != nil || r.MemoryMiB != 14000 {
		t.Errorf("reserve the whole GPU: %+v, %v", r, err)
	}
	// A job larger than its claim is refused, naming both.
	if _, err := client.Open(ctx, d.addr, client.Options{Job: "big", PersistentMiB: 6000, EphemeralMiB: 4000, DeclaredS: 1, Claim: "uid-1", ClaimSecret: r.Secret}); err == nil || !strings.Contains(err.Error(), "more than the 8000 MiB of claim ns/one") {
		t.Errorf("a job larger than its claim: %v", err)
	}
}

// After a restart a recovered session goes back to the GPU it held (its process
// has memory there), and the claim it resumes under ends it when released,
// whether the driver asserts the claim again before the resume or after.
func TestRecoveredSessionKeepsItsGPUAndClaim(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.jsonl")
	file, err := eventlog.OpenAppend(path)
	if err != nil {
		t.Fatal(err)
	}
	file.SetFlushEach(true)
	a := start(t, "pack", 14000, func(c *server.Config) { twoGPUs("")(c); c.Log = file })
	ctx := context.Background()
	if _, err := a.ReserveClaim("uid-b", "ns/b", 5, 4000, secretB); err != nil {
		t.Fatal(err)
	}
	first, err := client.Open(ctx, a.addr, client.Options{Job: "first", PersistentMiB: 500, EphemeralMiB: 500, DeclaredS: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := client.Open(ctx, a.addr, client.Options{Job: "b", PersistentMiB: 500, EphemeralMiB: 500, DeclaredS: 1, Claim: "uid-b", ClaimSecret: secretB})
	if err != nil {
		t.Fatal(err)
	}
	if first.GPUs[0] != 2 || b.GPUs[0] != 5 {
		t.Fatalf("first on %v, b on %v: want 2 and 5", first.GPUs, b.GPUs)
	}
	first.Close(true)
	// The crash: the log as a kill -9 leaves it (a shutdown would log b lost).
	crashed := filepath.Join(t.TempDir(), "crashed.jsonl")
	snapshot, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(crashed, snapshot, 0o644); err != nil {
		t.Fatal(err)
	}
	a.Shutdown()
	file.Close()

	// Alone after the restart, least-loaded would choose GPU 2 for b.
	j, err := server.ReadJournal(crashed)
	if err != nil {
		t.Fatal(err)
	}
	d := start(t, "pack", 14000, func(c *server.Config) { twoGPUs("")(c); c.Recover, c.RecoverWindow = j, time.Minute })
	s := d.Sessions()
	if len(s) != 1 || s[0].Job != "b" || len(s[0].Gpus) != 1 || s[0].Gpus[0] != 5 {
		t.Fatalf("recovered sessions %v: want b on GPU 5, where it was", s)
	}
	raw := rawConn(t, d)
	if rep := raw.call(`{"op":"open","id":1,"version":1,"job":"b","resume":true,"persistent_mib":500,"ephemeral_mib":500,"claim":"uid-b","resume_token":"` + b.ResumeToken + `","claim_secret":"` + secretB + `"}`); rep["ok"] != true {
		t.Fatalf("resume b: %v", rep)
	}
	// The driver asserts the claim after the resume (its resync), with its secret.
	if _, err := d.ReserveClaim("uid-b", "ns/b", 5, 4000, secretB); err != nil {
		t.Fatal(err)
	}
	if existed, ended, err := d.ReleaseClaim("uid-b"); err != nil || !existed || ended != "b" {
		t.Errorf("release after restart = %v, %q, %v; want it to end b", existed, ended, err)
	}
}

// TestClaimTheft: a claim is usable only by the pod it was prepared for. Before,
// anyone could open naming another pod's claim, and the pod's own job was then
// refused ("already has session ... open"). Now an open without the claim's
// secret, or with another, is refused with claim_denied (the connection
// closed), whether or not the claim's session is open, and leaves the claim
// and its session as they were; the connect API refuses it the same way.
func TestClaimTheft(t *testing.T) {
	d := start(t, "pack", 14000, twoGPUs(""))
	ctx := context.Background()
	if _, err := d.ReserveClaim("uid-pod", "team-a/pod", 5, 4000, secretA); err != nil {
		t.Fatal(err)
	}
	steal := func(when string) {
		t.Helper()
		for _, tc := range []struct{ name, extra, want string }{
			{"no secret", "", "needs its secret: send it in the field claim_secret"},
			{"another secret", `,"claim_secret":"` + secretB + `"`, "not claim team-a/pod (uid-pod)'s"},
		} {
			c := rawConn(t, d)
			rep := c.call(`{"op":"open","id":1,"version":1,"job":"thief","persistent_mib":10,"ephemeral_mib":10,"claim":"uid-pod"` + tc.extra + `}`)
			if rep["code"] != protocol.CodeClaimDenied || !strings.Contains(fmt.Sprint(rep["error"]), tc.want) {
				t.Errorf("%s: open naming the claim with %s: %v, want claim_denied saying %q", when, tc.name, rep, tc.want)
			}
			if _, closed := c.untilEOF(5 * time.Second); !closed {
				t.Errorf("%s: open with %s: the connection should be closed", when, tc.name)
			}
		}
	}
	steal("before the pod's job opens")
	if n := len(d.Sessions()); n != 0 {
		t.Fatalf("refused opens left %d sessions", n)
	}
	pod, err := client.Open(ctx, d.addr, client.Options{Job: "pod-job", PersistentMiB: 500, EphemeralMiB: 500, DeclaredS: 1, Claim: "uid-pod", ClaimSecret: secretA})
	if err != nil {
		t.Fatalf("the pod's own job: %v", err)
	}
	if err := pod.Begin(); err != nil {
		t.Fatal(err)
	}
	steal("while the pod's job runs")
	hs := api(t, d)
	sc := salusv1connect.NewSchedulerServiceClient(hs.Client(), hs.URL)
	_, err = sc.OpenSession(ctx, connect.NewRequest(&salusv1.OpenSessionRequest{Job: "thief", PersistentMib: 10, EphemeralMib: 10, Claim: "uid-pod"}))
	if connect.CodeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), "claim_denied") {
		t.Errorf("open naming the claim over the connect API without its secret: %v, want permission_denied (claim_denied)", err)
	}
	if ss := d.Sessions(); len(ss) != 1 || ss[0].Job != "pod-job" || ss[0].State != "running" {
		t.Fatalf("the thieves disturbed the pod's session: %v", ss)
	}
	if err := pod.End(0, 0); err != nil {
		t.Fatal(err)
	}
	// The claim is still the pod's: its release ends the pod's session.
	if existed, ended, err := d.ReleaseClaim("uid-pod"); err != nil || !existed || ended != "pod-job" {
		t.Errorf("release = %v, %q, %v; want it to end pod-job", existed, ended, err)
	}
}

// TestClaimSecretFromTheEnvironment: the Go client sends $SALUS_CLAIM_SECRET
// with its claim, as the DRA driver's CDI edits set it.
func TestClaimSecretFromTheEnvironment(t *testing.T) {
	d := start(t, "pack", 14000, nil)
	if _, err := d.ReserveClaim("uid-env", "ns/env", 0, 0, secretB); err != nil {
		t.Fatal(err)
	}
	t.Setenv(client.EnvClaimSecret, secretB)
	s, err := client.Open(context.Background(), d.addr, client.Options{Job: "env", PersistentMiB: 1, EphemeralMiB: 1, Claim: "uid-env"})
	if err != nil {
		t.Fatalf("open with the secret from $%s: %v", client.EnvClaimSecret, err)
	}
	s.Close(true)
}

// TestReserveRefusesBadClaimIDsAndSecrets: a claim UID with a NUL, a newline or
// another control character (or anything a CDI device name cannot hold) is
// refused at reserve, and at open; so are secrets too short to be secret and a
// reservation again with another secret.
func TestReserveRefusesBadClaimIDsAndSecrets(t *testing.T) {
	d := start(t, "pack", 14000, nil)
	for _, uid := range []string{"a\x00b", "a\nb", "a\rb", "a\tb", "a\x7fb", "a\u0085b", "a b", "-lead", "a/b"} {
		if _, err := d.ReserveClaim(uid, "ns/x", 0, 100, ""); server.CodeOf(err) != protocol.CodeBadRequest || !strings.Contains(err.Error(), "not a Kubernetes UID") {
			t.Errorf("reserve claim %q: %v, want bad_request", uid, err)
		}
	}
	if _, err := d.ReserveClaim("uid-ok", "ns/x\ny", 0, 100, ""); server.CodeOf(err) != protocol.CodeBadRequest {
		t.Errorf("a claim name with a newline: %v, want bad_request", err)
	}
	c := rawConn(t, d)
	if rep := c.call(`{"op":"open","id":1,"version":1,"job":"x","persistent_mib":1,"ephemeral_mib":1,"claim":"a\u0000b"}`); rep["code"] != protocol.CodeBadRequest {
		t.Errorf("open naming a claim with a NUL: %v, want bad_request", rep)
	}
	for _, secret := range []string{"short", strings.Repeat("x", 257), strings.Repeat("x", 31) + "\n", strings.Repeat("x", 31) + " "} {
		if _, err := d.ReserveClaim("uid-ok", "ns/ok", 0, 100, secret); server.CodeOf(err) != protocol.CodeBadRequest || !strings.Contains(err.Error(), "field secret") {
			t.Errorf("reserve with secret %q: %v, want bad_request", secret, err)
		}
	}
	if _, err := d.ReserveClaim("uid-ok", "ns/ok", 0, 100, secretA); err != nil {
		t.Fatal(err)
	}
	if r, err := d.ReserveClaim("uid-ok", "ns/ok", 0, 100, secretA); err != nil || !r.Existed || r.Secret != "" {
		t.Errorf("reserved again with its secret: %+v, %v; want existed", r, err)
	}
	if r, err := d.ReserveClaim("uid-ok", "ns/ok", 0, 100, ""); err != nil || !r.Existed || r.Secret != "" {
		t.Errorf("reserved again without a secret: %+v, %v; want existed, no secret given", r, err)
	}
	if _, err := d.ReserveClaim("uid-ok", "ns/ok", 0, 100, secretB); server.CodeOf(err) != protocol.CodeRejected || !strings.Contains(err.Error(), "another secret") {
		t.Errorf("reserved again with another secret: %v, want rejected", err)
	}
}

// TestResumeUnderAClaimNeedsItsSecret: a session resumed after a restart naming
// a claim must have the claim's secret: when the claim is already reserved it is
// checked at the resume (claim_denied, the session untouched); when the driver
// reserves the claim after the resume, a session that gave another secret is not
// the claim's, and the claim's release does not end it.
func TestResumeUnderAClaimNeedsItsSecret(t *testing.T) {
	j := server.NewJournal()
	j.Emit(eventlog.Event{Kind: eventlog.Run, Policy: "pack", Engine: "live", CapacityMiB: 14000})
	for _, job := range []string{"early", "late"} {
		j.Emit(eventlog.Event{T: 1, Kind: eventlog.Arrive, Job: job, JobKind: "train", PersistentMiB: 10, EphemeralMiB: 10, ResumeSHA256: sha256Hex(testResumeToken)})
	}
	d := start(t, "pack", 14000, func(c *server.Config) { c.Recover, c.RecoverWindow = j, time.Minute })
	if _, err := d.ReserveClaim("uid-early", "ns/early", 0, 1000, secretA); err != nil {
		t.Fatal(err)
	}
	resume := func(job, claim, secret string) map[string]any {
		c := rawConn(t, d)
		return c.call(`{"op":"open","id":1,"version":1,"job":"` + job + `","resume":true,"persistent_mib":10,"ephemeral_mib":10,"resume_token":"` + testResumeToken +
			`","claim":"` + claim + `","claim_secret":"` + secret + `"}`)
	}
	if rep := resume("early", "uid-early", secretB); rep["code"] != protocol.CodeClaimDenied {
		t.Errorf("resume naming a reserved claim with another secret: %v, want claim_denied", rep)
	}
	if ss := d.Sessions(); len(ss) != 2 || ss[0].State != "idle" {
		t.Fatalf("the refused resume changed the sessions: %v", ss)
	}
	if rep := resume("early", "uid-early", secretA); rep["ok"] != true {
		t.Fatalf("resume with the claim's secret: %v", rep)
	}
	if rep := resume("late", "uid-late", secretB); rep["ok"] != true {
		t.Fatalf("resume naming a claim not reserved yet: %v", rep)
	}
	if _, err := d.ReserveClaim("uid-late", "ns/late", 0, 1000, secretA); err != nil {
		t.Fatal(err)
	}
	if _, ended, _ := d.ReleaseClaim("uid-late"); ended != "" {
		t.Errorf("the release of claim uid-late ended %q, which resumed with another secret", ended)
	}
	if _, ended, _ := d.ReleaseClaim("uid-early"); ended != "early" {
		t.Errorf("the release of claim uid-early ended %q, want its session early", ended)
	}
}
