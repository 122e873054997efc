//go:build linux

package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The daemon's socket goes where no other user can take its name: the default
// socket's directory is made 0700 and must be the daemon's own, and a socket
// in a directory others may write (not sticky), in another user's directory, or
// where another user's socket already is, is refused with what to do.
func TestSocketPathOthersCannotTake(t *testing.T) {
	base, err := os.MkdirTemp("", "salus-sockdir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	def := filepath.Join(base, "run", "salus", "salus.sock")
	old := defaultSocket
	defaultSocket = func() string { return def }
	t.Cleanup(func() { defaultSocket = old })
	os.Mkdir(filepath.Join(base, "run"), 0o755)

	l, bound, err := listenUnix(def, "--socket", socketAccess{mode: 0o600})
	if err != nil {
		t.Fatalf("the default socket: %v", err)
	}
	l.Close()
	os.Remove(bound)
	if fi, err := os.Stat(filepath.Dir(def)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the default socket's directory: %v, %v; want it made 0700", fi.Mode(), err)
	}
	os.Chmod(filepath.Dir(def), 0o777)
	if _, _, err := listenUnix(def, "--socket", socketAccess{mode: 0o600}); err == nil || !strings.Contains(err.Error(), "chmod go-w") {
		t.Errorf("the default socket's directory made 0777 by someone: %v; want it refused", err)
	}
	os.Chmod(filepath.Dir(def), 0o700)

	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	if _, _, err := listenUnix(filepath.Join(open, "s.sock"), "--socket", socketAccess{}); err == nil || !strings.Contains(err.Error(), "can be written by its group or others") {
		t.Errorf("a socket in a directory everyone may write: %v; want it refused", err)
	}
	sticky := filepath.Join(base, "sticky")
	os.Mkdir(sticky, 0o777)
	os.Chmod(sticky, 0o777|os.ModeSticky)
	l, bound, err = listenUnix(filepath.Join(sticky, "s.sock"), "--socket", socketAccess{})
	if err != nil {
		t.Errorf("a socket in a sticky directory (as /tmp): %v; want it served", err)
	} else {
		l.Close()
		os.Remove(bound)
	}

	if os.Getuid() != 0 {
		t.Skip("the other user's directory and socket need root to be made")
	}
	theirs := filepath.Join(base, "theirs")
	os.Mkdir(theirs, 0o755)
	os.Chown(theirs, 65534, 65534)
	if _, _, err := listenUnix(filepath.Join(theirs, "s.sock"), "--socket", socketAccess{}); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Errorf("a socket in another user's directory: %v; want it refused", err)
	}
	taken := filepath.Join(sticky, "taken.sock")
	tl, err := net.ListenUnix("unix", &net.UnixAddr{Name: taken, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	tl.SetUnlinkOnClose(false) // the file stays, as a dead process's does
	tl.Close()
	os.Lchown(taken, 65534, 65534)
	if _, _, err := listenUnix(taken, "--socket", socketAccess{}); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Errorf("a socket file another user made: %v; want it refused", err)
	}
}
