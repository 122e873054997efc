//go:build unix

package eventlog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The journal's files are never opened through a planted symbolic link: a link
// at PATH is refused by OpenAppend, naming it; a link at PATH.rotating (the
// rotation's temporary file, opened with O_TRUNC before) is removed and the
// file made anew; the files they point to are unchanged.
func TestPlantedLinkIsNotFollowed(t *testing.T) {
	dir, private := t.TempDir(), t.TempDir()
	target := filepath.Join(private, "secret")
	const secret = "the owner's own data\n"
	if err := os.WriteFile(target, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "live.jsonl")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if a, err := OpenAppend(path); err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), path) {
		if a != nil {
			a.Close()
		}
		t.Errorf("OpenAppend through a link planted at %s: %v; want it refused, naming it", path, err)
	}
	os.Remove(path)
	a, err := OpenAppend(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.Emit(Event{T: 1, Kind: Arrive, Job: "a"})
	if err := os.Symlink(target, path+".rotating"); err != nil {
		t.Fatal(err)
	}
	if err := a.Rotate(snapshotOf(2, 3)); err != nil {
		t.Fatalf("a rotation with a link planted at %s.rotating: %v; want the link removed and the file made anew", path, err)
	}
	if b, _ := os.ReadFile(target); string(b) != secret {
		t.Errorf("the planted links' target now holds %q, want it unchanged", b)
	}
	if n := openAfterRestart(t, path); n != 3 {
		t.Errorf("after the rotation a restart finds %d sessions open, want the snapshot's 3", n)
	}
}

// The journal's files are the daemon's user's alone: OpenAppend makes PATH
// 0600, and a rotation makes the new PATH 0600 (its segment keeps the mode the
// file had); an existing file keeps its mode.
func TestJournalFilesAreMode0600(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.jsonl")
	a, err := OpenAppend(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.Emit(Event{T: 1, Kind: Arrive, Job: "a"})
	if err := a.Rotate(snapshotOf(2, 1)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, SegmentName(path, 1)} {
		if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", name, fi.Mode().Perm(), err)
		}
	}
	old := filepath.Join(t.TempDir(), "old.jsonl")
	if err := os.WriteFile(old, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	os.Chmod(old, 0o640)
	b, err := OpenAppend(old)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if fi, err := os.Stat(old); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("an existing journal of mode 0640: now %v (%v), want it kept", fi.Mode().Perm(), err)
	}
}
