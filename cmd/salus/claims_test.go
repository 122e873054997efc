package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/server"
)

// TestGetClaims: salus get claims lists every reserved claim (GPU, memory, the
// intent that binds its session, its share, the session open under it), and
// salus get lanes each GPU's memory reserved by claims.
func TestGetClaims(t *testing.T) {
	dir := t.TempDir()
	adminFile := filepath.Join(dir, "admin")
	os.WriteFile(adminFile, []byte("admin-secret\n"), 0o600)
	p, _ := core.Lookup("wfair")
	srv, err := server.New(server.Config{Policy: p, CapacityMiB: 14000, Token: "user-secret", AdminToken: "admin-secret",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	addr := strings.TrimPrefix(hs.URL, "http://")
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go srv.ServeFast(l)
	one := 1
	const secret = "c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0"
	if _, err := srv.Reserve(server.ClaimSpec{UID: "uid-train", Name: "team/train", MemoryMiB: 3500, Secret: secret,
		Intent: server.ClaimIntent{DeclaredS: 3600, Priority: &one}}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Reserve(server.ClaimSpec{UID: "uid-idle", Name: "team/idle", MemoryMiB: 7000, Intent: server.ClaimIntent{Share: 2}}); err != nil {
		t.Fatal(err)
	}
	s, err := client.Open(context.Background(), "unix:"+sock, client.Options{Job: "trainer", PersistentMiB: 100, EphemeralMiB: 100, DeclaredS: 2.5,
		Claim: "uid-train", ClaimSecret: secret})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Abort()
	out, err := run(t, "get", "claims", "--addr", addr, "--admin-token-file", adminFile)
	if err != nil ||
		!regexp.MustCompile(`(?m)^\s*uid-idle\s+team/idle\s+0\s+7000\s+-\s+-\s+2\s+-\s*$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^\s*uid-train\s+team/train\s+0\s+3500\s+3600\.0\s+1\s+0\.25\s+trainer\s*$`).MatchString(out) {
		t.Errorf("get claims: %v\n%s", err, out)
	}
	out, err = run(t, "get", "claims", "-o", "json", "--addr", addr, "--admin-token-file", adminFile)
	if err != nil || !strings.Contains(out, `"session": "trainer"`) || !strings.Contains(out, `"declaredS": 3600`) {
		t.Errorf("get claims -o json: %v\n%s", err, out)
	}
	out, err = run(t, "get", "lanes", "--addr", addr, "--admin-token-file", adminFile)
	if err != nil || !strings.Contains(out, "10500 MiB reserved by claims") {
		t.Errorf("get lanes: %v\n%s", err, out)
	}
}
