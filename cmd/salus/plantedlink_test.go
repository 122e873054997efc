//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A planted link is refused: a symbolic link planted at the lock file's path or
// at the journal's path, in a folder other users may write, pointing to a 0600
// file, makes the daemon refuse to start, naming the link, and the file it
// points to is unchanged (a daemon run as root once truncated one).
func TestPlantedLinkIsRefused(t *testing.T) {
	shared := t.TempDir()
	if err := os.Chmod(shared, 0o777); err != nil { // a folder others may write, not sticky
		t.Fatal(err)
	}
	private := t.TempDir()
	target := filepath.Join(private, "secret")
	const secret = "the owner's own data\n"
	events := filepath.Join(shared, "live.jsonl")
	for _, planted := range []string{events + ".lock", events} {
		if err := os.WriteFile(target, []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Remove(events + ".lock")
		os.Remove(events)
		if err := os.Symlink(target, planted); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "serve", "--socket", filepath.Join(private, "s.sock"), "--addr", "", "--fast-addr", "", "--events", events)
		cmd.Env = append(os.Environ(), "SALUS_CMD_TEST_MAIN=1")
		out, err := runWithin(cmd, time.Minute)
		if err == nil || !strings.Contains(out, "symbolic link") || !strings.Contains(out, filepath.Dir(planted)) {
			t.Errorf("a link planted at %s: %v\n%s\nwant the daemon refused, naming the link", planted, err, out)
		}
		if b, _ := os.ReadFile(target); string(b) != secret {
			t.Errorf("a link planted at %s: its target now holds %q, want it unchanged", planted, b)
		}
		if fi, err := os.Stat(target); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("a link planted at %s: its target's mode is now %v (%v), want 0600", planted, fi.Mode(), err)
		}
	}
}

// The user's own link to the journal, in a folder only they may write, is
// resolved once and the daemon writes the journal at its real path (finding
// 5's behaviour), with its lock beside it, not beside the link.
func TestOwnLinkToTheJournalIsFollowed(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	events := filepath.Join(dir, "live.jsonl")
	link := filepath.Join(other, "link.jsonl")
	if err := os.WriteFile(events, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(events, link); err != nil {
		t.Fatal(err)
	}
	a := startDaemonProc(t, filepath.Join(other, "s.sock"), "--events", link)
	a.cmd.Process.Kill()
	a.cmd.Wait()
	if fi, err := os.Stat(events); err != nil || fi.Size() == 0 {
		t.Errorf("the journal at the link's real path %s: %v, %v; want the daemon's run header there", events, fi, err)
	}
	if _, err := os.Lstat(events + ".lock"); err != nil {
		t.Errorf("the lock beside the real journal: %v", err)
	}
	if _, err := os.Lstat(link + ".lock"); err == nil {
		t.Errorf("a lock beside the link %s: want it beside the real journal only", link)
	}
}

// The journal and its lock are made 0600 (the journal holds job names, owners'
// uids and token hashes); a journal other users may read, an older daemon's,
// is left as it is and warned of, naming it and the chmod.
func TestJournalIsNotWorldReadable(t *testing.T) {
	dir := t.TempDir()
	events := filepath.Join(dir, "live.jsonl")
	a := startDaemonProc(t, filepath.Join(dir, "s.sock"), "--events", events)
	a.cmd.Process.Kill()
	a.cmd.Wait()
	for _, name := range []string{events, events + ".lock"} {
		if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", name, fi.Mode().Perm(), err)
		}
	}
	if strings.Contains(a.stderr.String(), "other users may read") {
		t.Errorf("a warning of a journal others may read, for one of mode 0600:\n%s", a.stderr.String())
	}
	if err := os.Chmod(events, 0o644); err != nil {
		t.Fatal(err)
	}
	b := startDaemonProc(t, filepath.Join(dir, "s.sock"), "--events", events, "--continue-events")
	b.cmd.Process.Kill()
	b.cmd.Wait()
	if msg := b.stderr.String(); !strings.Contains(msg, "other users may read") || !strings.Contains(msg, events) || !strings.Contains(msg, "chmod 600") {
		t.Errorf("a restart on a journal of mode 0644 said:\n%s\nwant a warning naming it and the chmod", msg)
	}
}
