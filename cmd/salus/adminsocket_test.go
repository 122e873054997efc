package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/server"
)

// TestAdminSocketNeedsNoToken: as salus serve runs it (default limits, the API
// socket behind the connection limit), the daemon's own user reaches the admin
// calls over --addr unix:API_SOCKET without a token, and despite a stale admin
// token file in the default place (another daemon's). Both failed for a new
// user on the first try: the limit's wrapper hid the Unix peer, and the stale
// token was refused before the peer was looked at.
func TestAdminSocketNeedsNoToken(t *testing.T) {
	dir := t.TempDir()
	p, _ := core.Lookup("pack")
	srv, err := server.New(server.Config{Policy: p, CapacityMiB: 1000, Token: "user-secret", AdminToken: "admin-secret",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	apiSock, fastSock := filepath.Join(dir, "api.sock"), filepath.Join(dir, "fast.sock")
	al, err := net.Listen("unix", apiSock)
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.NewHTTPServer()
	go hs.Serve(srv.LimitListener(al))
	defer hs.Close()
	fl, err := net.Listen("unix", fastSock)
	if err != nil {
		t.Fatal(err)
	}
	go srv.ServeFast(fl)
	s, err := client.Open(context.Background(), "unix:"+fastSock, client.Options{Job: "hog", PersistentMiB: 1, EphemeralMiB: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Abort()

	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(dir, "run")) // no token file there
	owner := fmt.Sprintf("uid %d", os.Getuid())
	if out, err := run(t, "get", "sessions", "--addr", "unix:"+apiSock); err != nil || !strings.Contains(out, "hog") || !strings.Contains(out, owner) {
		t.Errorf("get sessions over the API socket, no token file: %v\n%s", err, out)
	}
	stale := filepath.Join(dir, "run", "salus", "admin-token")
	os.MkdirAll(filepath.Dir(stale), 0o700)
	os.WriteFile(stale, []byte("another-daemons-token\n"), 0o600)
	out, err := run(t, "get", "sessions", "--addr", "unix:"+apiSock)
	if err != nil || !strings.Contains(out, "hog") {
		t.Errorf("get sessions over the API socket with a stale default admin token file: %v\n%s", err, out)
	}
	// Over the API socket the kernel names the caller: even a token file named on
	// the command line that is wrong does not stand in the way of the daemon's
	// uid (over TCP, where nobody vouches for the caller, it is refused).
	if out, err := run(t, "get", "sessions", "--addr", "unix:"+apiSock, "--admin-token-file", stale); err != nil || !strings.Contains(out, "hog") {
		t.Errorf("an explicit wrong --admin-token-file over the API socket, as the daemon's uid: %v\n%s", err, out)
	}
}
