//go:build linux

package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A stale lock left by a daemon run as root, on a journal an unprivileged
// daemon is then started on, is named for what it is: whose lock it is and
// what to do, not "cannot create". It needs root, to leave root's lock and run
// the second daemon as another user (nobody, 65534).
func TestStaleLockOfAnotherUserIsNamed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: to leave a lock as root and start the daemon as another user")
	}
	const nobody = 65534
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755) // the test's folders, reachable by nobody
	bin := filepath.Join(dir, "salus.test")
	copyExecutable(t, os.Args[0], bin)
	jdir := filepath.Join(dir, "j")
	if err := os.Mkdir(jdir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(jdir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	events := filepath.Join(jdir, "live.jsonl")
	if err := os.WriteFile(events+".lock", []byte("the salus serve of pid 1, started 2026-01-01T00:00:00Z\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--socket", filepath.Join(jdir, "s.sock"), "--addr", "", "--fast-addr", "", "--events", events)
	cmd.Env = append(os.Environ(), "SALUS_CMD_TEST_MAIN=1", "HOME="+jdir, "XDG_RUNTIME_DIR=", "TMPDIR="+jdir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := runWithin(cmd, time.Minute)
	if err == nil || !strings.Contains(out, events+".lock") || !strings.Contains(out, "belongs to root (uid 0)") || !strings.Contains(out, "remove the lock") {
		t.Errorf("a daemon run as uid %d on a journal whose lock root left: %v\n%s\nwant it refused, saying the lock is uid 0's and what to do", nobody, err, out)
	}
}

// copyExecutable copies the file src to dst, mode 0755.
func copyExecutable(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
