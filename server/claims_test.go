package server_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/eventlog"
	"github.com/salusgo/salus/protocol"
	"github.com/salusgo/salus/server"
)

// A claim's session goes to the claim's GPU though least-loaded would put it on
// the other, must fit in the claim's memory, and ends when the claim is released.
func TestClaimPinsSessionToItsGPU(t *testing.T) {
	d := start(t, "pack", 14000, twoGPUs(""))
	ctx := context.Background()
	if _, err := d.ReserveClaim("uid-a", "ns/a", 2, 6000); err != nil {
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
	s, err := client.Open(ctx, d.addr, client.Options{Job: "claimed", PersistentMiB: 2000, EphemeralMiB: 3000, DeclaredS: 1, Claim: "uid-a"})
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
	if _, err := d.ReserveClaim("uid-tight", "ns/tight", 5, 5100); err != nil {
		t.Fatal(err)
	}
	tight, err := client.Open(ctx, d.addr, client.Options{Job: "tight", PersistentMiB: 2000, EphemeralMiB: 3000, DeclaredS: 1, Claim: "uid-tight"})
	if err != nil {
		t.Fatal(err)
	}
	defer tight.Close(true)
	if tight.LaneMiB != 5100 {
		t.Errorf("the job of a 5100 MiB claim got a lane of %v MiB: pack's padding should stop at the claim", tight.LaneMiB)
	}
	// One session at a time per claim.
	if _, err := client.Open(ctx, d.addr, client.Options{Job: "second", PersistentMiB: 10, EphemeralMiB: 10, DeclaredS: 1, Claim: "uid-a"}); err == nil || !strings.Contains(err.Error(), `already has session "claimed"`) {
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
	if _, err := client.Open(ctx, d.addr, client.Options{Job: "late", PersistentMiB: 10, EphemeralMiB: 10, DeclaredS: 1, Claim: "uid-a"}); err == nil || !strings.Contains(err.Error(), "not reserved") {
		t.Errorf("open under a released claim: %v", err)
	}
}

// Reservations are checked against the GPU, each other and themselves; a retry
// of the same reservation is a no-op.
func TestReserveClaimChecks(t *testing.T) {
	d := start(t, "pack", 14000, twoGPUs(""))
	ctx := context.Background()
	r, err := d.ReserveClaim("uid-1", "ns/one", 5, 8000)
	if err != nil || r.Existed || r.GPUFreeMiB != 6000 {
		t.Fatalf("reserve = %+v, %v; want 6000 MiB left, new", r, err)
	}
	if r, err := d.ReserveClaim("uid-1", "ns/one", 5, 8000); err != nil || !r.Existed {
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
		_, err := d.ReserveClaim(c.uid, "ns/x", c.gpu, c.mib)
		if err == nil || !strings.Contains(err.Error(), c.want) || server.CodeOf(err) == "" {
			t.Errorf("reserve %s %d MiB on GPU %d = %v, want an error with %q", c.uid, int(c.mib), c.gpu, err, c.want)
		}
	}
	// 0 MiB is the whole GPU.
	if r, err := d.ReserveClaim("uid-3", "ns/three", 2, 0); err != nil || r.MemoryMiB != 14000 {
		t.Errorf("reserve the whole GPU: %+v, %v", r, err)
	}
	// A job larger than its claim is refused, naming both.
	if _, err := client.Open(ctx, d.addr, client.Options{Job: "big", PersistentMiB: 6000, EphemeralMiB: 4000, DeclaredS: 1, Claim: "uid-1"}); err == nil || !strings.Contains(err.Error(), "more than the 8000 MiB of claim ns/one") {
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
	if _, err := a.ReserveClaim("uid-b", "ns/b", 5, 4000); err != nil {
		t.Fatal(err)
	}
	first, err := client.Open(ctx, a.addr, client.Options{Job: "first", PersistentMiB: 500, EphemeralMiB: 500, DeclaredS: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := client.Open(ctx, a.addr, client.Options{Job: "b", PersistentMiB: 500, EphemeralMiB: 500, DeclaredS: 1, Claim: "uid-b"})
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
	if rep := raw.call(`{"op":"open","id":1,"version":1,"job":"b","resume":true,"persistent_mib":500,"ephemeral_mib":500,"claim":"uid-b"}`); rep["ok"] != true {
		t.Fatalf("resume b: %v", rep)
	}
	// The driver asserts the claim after the resume (its resync).
	if _, err := d.ReserveClaim("uid-b", "ns/b", 5, 4000); err != nil {
		t.Fatal(err)
	}
	if existed, ended, err := d.ReleaseClaim("uid-b"); err != nil || !existed || ended != "b" {
		t.Errorf("release after restart = %v, %q, %v; want it to end b", existed, ended, err)
	}
}
