package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/salusgo/salus/client"
	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/server"
)

// syncBuffer is a log destination safe for concurrent writes.
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

// TestServeSocketAccess: the fast path's socket is created 0660 with the daemon's
// group, so another user cannot connect, and the same user in that group can,
// with its uid logged. Run as root, the other user is a real process under uid
// 65534; otherwise only the mode and group are checked.
func TestServeSocketAccess(t *testing.T) {
	dir, err := os.MkdirTemp("", "salus-access-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755) // others may reach the socket file; its own mode decides
	sock := filepath.Join(dir, "s.sock")
	p, _ := core.Lookup("pack")
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	srv, err := server.New(server.Config{Policy: p, CapacityMiB: 1000, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveAddrs(ctx, srv, logger, nil, "", sock, "", listenAccess{}, "end") }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	var s *client.Session
	for i := 0; ; i++ {
		if s, err = client.Open(context.Background(), "unix:"+sock, client.Options{Job: "owner", PersistentMiB: 1, EphemeralMiB: 1}); err == nil || i == 100 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	s.Close(true)
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o660 {
		t.Errorf("socket mode %04o, want 0660 (owner and group read-write, others nothing)", perm)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Gid) != os.Getgid() {
		t.Errorf("socket group %d, want the daemon's %d", st.Gid, os.Getgid())
	}
	if !strings.Contains(logs.String(), fmt.Sprintf("uid=%d", os.Getuid())) {
		t.Errorf("the session's peer uid is not logged:\n%s", logs.String())
	}
	if os.Getuid() != 0 {
		t.Log("not root: cannot run a client as another user; checked the mode and group only")
		return
	}
	// Run this test binary as another user, in the helper test below.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := filepath.Join(dir, "helper")
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(helper, b, 0o755); err != nil {
		t.Fatal(err)
	}
	asOther := func(groups ...uint32) (string, error) {
		cmd := exec.Command(helper, "-test.run=^TestHelperOpenAsAnotherUser$")
		cmd.Dir = dir
		cmd.Env = []string{"SALUS_TEST_SOCKET=" + sock}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: groups}}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := asOther()
	if err == nil || !strings.Contains(out, "permission denied") {
		t.Errorf("uid 65534 outside the socket's group: %v\n%s\nwant the connection refused (permission denied)", err, out)
	}
	out, err = asOther(uint32(os.Getgid()))
	if err != nil || !strings.Contains(out, "opened") {
		t.Errorf("uid 65534 in the socket's group: %v\n%s\nwant a session", err, out)
	}
	if !strings.Contains(logs.String(), "uid=65534") {
		t.Errorf("the other user's uid is not logged:\n%s", logs.String())
	}
}

// TestHelperOpenAsAnotherUser is run by TestServeSocketAccess under another uid.
func TestHelperOpenAsAnotherUser(t *testing.T) {
	sock := os.Getenv("SALUS_TEST_SOCKET")
	if sock == "" {
		t.Skip("run by TestServeSocketAccess")
	}
	s, err := client.Open(context.Background(), "unix:"+sock, client.Options{Job: fmt.Sprintf("uid%d", os.Getuid()), PersistentMiB: 1, EphemeralMiB: 1})
	if err != nil {
		fmt.Println("refused:", err)
		os.Exit(3)
	}
	s.Close(true)
	fmt.Println("opened")
}

func TestLoadToken(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "salus", "token")
	tok, err := loadToken(path, "--token-file")
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) != 64 {
		t.Errorf("token %q: want 64 hex digits", tok)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file %v %v: want mode 0600", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("token directory %v %v: want mode 0700", fi.Mode(), err)
	}
	if again, err := loadToken(path, "--token-file"); err != nil || again != tok {
		t.Errorf("second start: %q %v, want the same token", again, err)
	}
	os.Chmod(path, 0o644)
	if _, err := loadToken(path, "--token-file"); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a token file others can read: %v, want a refusal", err)
	}
	os.Chmod(path, 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(path, link)
	if _, err := loadToken(link, "--token-file"); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a link: %v, want a refusal", err)
	}
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	if _, err := loadToken(empty, "--token-file"); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("an empty file: %v, want a refusal", err)
	}
	if os.Getuid() == 0 {
		os.Chown(path, 65534, 65534)
		if _, err := loadToken(path, "--token-file"); err == nil || !strings.Contains(err.Error(), "uid 65534") {
			t.Errorf("another user's token file: %v, want a refusal", err)
		}
	}
}

// TestTokenDirectoryPermissions: a token file in a directory its group or
// others may write to is refused (before, only the file's own mode was checked),
// whether the file is there yet or not; a sticky directory such as /tmp, or
// one of the daemon's user's own, is accepted.
func TestTokenDirectoryPermissions(t *testing.T) {
	for _, tc := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o700, true}, {0o755, true}, {0o770, false}, {0o757, false}, {0o777, false}, {0o777 | os.ModeSticky, true}, {0o770 | os.ModeSticky, true}} {
		for _, existing := range []bool{false, true} {
			dir := filepath.Join(t.TempDir(), "salus")
			os.Mkdir(dir, 0o700)
			path := filepath.Join(dir, "token")
			if existing {
				os.WriteFile(path, []byte("a-token-of-the-daemon\n"), 0o600)
			}
			os.Chmod(dir, tc.mode)
			_, err := loadToken(path, "--token-file")
			if tc.ok && err != nil {
				t.Errorf("directory mode %v (file there: %v): %v, want it accepted", tc.mode, existing, err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "can be written by its group or others") || !strings.Contains(err.Error(), "--token-file")) {
				t.Errorf("directory mode %v (file there: %v): %v, want a refusal naming the directory", tc.mode, existing, err)
			}
			if !tc.ok && !existing {
				if _, err := os.Stat(path); !os.IsNotExist(err) {
					t.Errorf("directory mode %v: a token file was created in it", tc.mode)
				}
			}
		}
	}
	if os.Getuid() == 0 {
		dir := filepath.Join(t.TempDir(), "theirs")
		os.Mkdir(dir, 0o755)
		os.Chown(dir, 65534, 65534)
		if _, err := loadToken(filepath.Join(dir, "token"), "--token-file"); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
			t.Errorf("a directory of another user: %v, want a refusal", err)
		}
	}
}

// TestServeWarnsOfASocketOthersMayWrite: --socket-mode 0666 or 0777 lets every
// user connect; serve says so in its log at start (before, it said nothing).
func TestServeWarnsOfASocketOthersMayWrite(t *testing.T) {
	for mode, warned := range map[string]bool{"0666": true, "0777": true, "0662": true, "0660": false, "0600": false, "0664": false} {
		dir := t.TempDir()
		// Nothing to listen on: serve stops right after its checks and warnings.
		out, err := run(t, "serve", "--socket", "", "--addr", "", "--fast-addr", "", "--socket-mode", mode,
			"--token-file", filepath.Join(dir, "token"), "--admin-token-file", filepath.Join(dir, "admin"))
		if err == nil || !strings.Contains(err.Error(), "nothing to listen on") {
			t.Fatalf("serve without listeners: %v\n%s", err, out)
		}
		if got := strings.Contains(out, "lets every user of the machine connect"); got != warned {
			t.Errorf("--socket-mode %s: warned %v, want %v:\n%s", mode, got, warned, out)
		}
	}
}

// TestServeRefusesAReadableTokenFile: salus serve stops at once, saying why.
func TestServeRefusesAReadableTokenFile(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("secret\n"), 0o644)
	_, err := run(t, "serve", "--socket", filepath.Join(dir, "s.sock"), "--addr", "", "--fast-addr", "", "--token-file", tok,
		"--admin-token-file", filepath.Join(dir, "admin"), "--log-level", "error")
	if err == nil || !strings.Contains(err.Error(), "--token-file") || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("serve with a token file others can read: %v", err)
	}
}

// TestAdminCommands: salus sessions, drain and evict reach the daemon with the
// admin token file, and are refused without it.
func TestAdminCommands(t *testing.T) {
	dir := t.TempDir()
	adminFile := filepath.Join(dir, "admin")
	userFile := filepath.Join(dir, "user")
	os.WriteFile(adminFile, []byte("admin-secret\n"), 0o600)
	os.WriteFile(userFile, []byte("user-secret\n"), 0o600)
	p, _ := core.Lookup("pack")
	srv, err := server.New(server.Config{Policy: p, CapacityMiB: 1000, Token: "user-secret", AdminToken: "admin-secret",
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
	s, err := client.Open(context.Background(), "unix:"+sock, client.Options{Job: "hog", PersistentMiB: 100, EphemeralMiB: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Abort()
	if _, err := run(t, "sessions", "--addr", addr, "--admin-token-file", userFile); err == nil || !strings.Contains(err.Error(), "permission_denied") {
		t.Errorf("sessions with the user token: %v, want permission denied", err)
	}
	out, err := run(t, "sessions", "--addr", addr, "--admin-token-file", adminFile)
	if err != nil || !strings.Contains(out, "hog") || !strings.Contains(out, fmt.Sprintf("uid %d", os.Getuid())) {
		t.Errorf("sessions: %v\n%s", err, out)
	}
	// kubectl-like views: lane 0 and zero counts shown; JSON with every field.
	out, err = run(t, "get", "lanes", "--addr", addr, "--admin-token-file", adminFile)
	if err != nil || !regexp.MustCompile(`(?m)^\s+0\s+0\s+220\s+100\s+100\s+1\s+0\s*$`).MatchString(out) || !strings.Contains(out, "gpu 0: capacity 1000 MiB, free 780 MiB, 1 lanes, 1 jobs") {
		t.Errorf("get lanes: %v\n%s", err, out)
	}
	out, err = run(t, "get", "stats", "-o", "json", "--addr", addr, "--admin-token-file", adminFile)
	if err != nil || !strings.Contains(out, `"lost": "0"`) || !strings.Contains(out, `"sessions": 1`) {
		t.Errorf("get stats -o json: %v\n%s", err, out)
	}
	out, err = run(t, "describe", "hog", "--addr", addr, "--admin-token-file", adminFile)
	if err != nil || !regexp.MustCompile(`(?m)^\s*lane\s+0\s*$`).MatchString(out) {
		t.Errorf("describe hog: %v\n%s", err, out)
	}
	if _, err := run(t, "describe", "nobody", "--addr", addr, "--admin-token-file", adminFile); err == nil || !strings.Contains(err.Error(), "no session") {
		t.Errorf("describe nobody: %v", err)
	}
	out, err = run(t, "evict", "hog", "--addr", addr, "--admin-token-file", adminFile, "--reason", "test")
	if err != nil || !strings.Contains(out, "evicted by the admin token's holder: test") {
		t.Errorf("evict: %v\n%s", err, out)
	}
	if err := s.Begin(); !client.Ended(err) || !strings.Contains(err.Error(), "evicted") {
		t.Errorf("the evicted client: %v", err)
	}
	out, err = run(t, "drain", "--addr", addr, "--admin-token-file", adminFile)
	if err != nil || !strings.Contains(out, "draining") || !srv.Draining() {
		t.Errorf("drain: %v\n%s", err, out)
	}
	if _, err := client.Open(context.Background(), "unix:"+sock, client.Options{Job: "late", PersistentMiB: 1, EphemeralMiB: 1}); err == nil || !strings.Contains(err.Error(), "draining") {
		t.Errorf("open while draining: %v", err)
	}
	out, err = run(t, "drain", "--resume", "--addr", addr, "--admin-token-file", adminFile)
	if err != nil || !strings.Contains(out, "admitting jobs again") || srv.Draining() {
		t.Errorf("drain --resume: %v\n%s", err, out)
	}
}
