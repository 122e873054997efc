package provenance

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/salusgo/salus/workload"
)

// A build's commit, its dirty flag and its release version come from the
// binary's build information; a checkout's pseudo-version is no release.
func TestFromBuild(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	for _, c := range []struct {
		main, commit string
		dirty        bool
		version      string
	}{
		{"v1.2.0", rev, false, "v1.2.0"},
		{"(devel)", rev, true, "devel"},
		{"v0.0.0-20260101000000-0123456789ab+dirty", rev, true, "devel"},
		{"", "", false, "devel"},
	} {
		info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: c.main}}
		if c.commit != "" {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: "vcs.revision", Value: c.commit})
		}
		if c.dirty {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: "vcs.modified", Value: "true"})
		}
		r := FromBuild(info, true)
		if r.Version != c.version || r.Commit != c.commit || r.Modified != c.dirty || r.Go != "go1.26.0" {
			t.Errorf("%+v: got %+v", c, r)
		}
	}
	if r := FromBuild(nil, false); r.Version != "devel" || r.Commit != "" {
		t.Errorf("no build information: %+v", r)
	}
}

// A generated trace's sha256 is that of the CSV salus trace gen writes; a
// file's, that of its bytes; a model file's changes with its bytes.
func TestHashes(t *testing.T) {
	tr, err := workload.Generate(workload.Default(), workload.GenOptions{Kind: workload.Salus100, Seed: 3, Jobs: 5})
	if err != nil {
		t.Fatal(err)
	}
	g, err := Generated(tr, "salus trace gen --kind salus100 --seed 3 --jobs 5")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "t.csv")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.WriteCSV(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	file, err := File(path)
	if err != nil {
		t.Fatal(err)
	}
	if g.SHA256 != file.SHA256 || g.Of != OfCSV || file.Of != OfFile || len(g.SHA256) != 64 {
		t.Errorf("generated %+v, its CSV as a file %+v: want one sha256", g, file)
	}
	m1, err := ModelOf(path)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, []byte("changed"), 0o644)
	m2, _ := ModelOf(path)
	if m1.SHA256 == m2.SHA256 || m1.Name != "file" {
		t.Errorf("a model file before and after a change: %+v, %+v", m1, m2)
	}
	if m, _ := ModelOf(""); m.Name != "rule" {
		t.Errorf(`ModelOf(""): %+v, want today's rule`, m)
	}
}

// A command run in this module's checkout whose build recorded no commit (go
// test, go run, -buildvcs=false) records the checkout's HEAD, and says so;
// a folder outside any checkout of it records none.
func TestCommitFromTheCheckout(t *testing.T) {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("no git checkout here: %v", err)
	}
	r := New([]string{"salus", "eval"})
	if r.CommitOf == "build" {
		t.Skip("this test binary's build recorded its commit")
	}
	if want := strings.TrimSpace(string(out)); r.Commit != want || r.CommitOf != "checkout" {
		t.Errorf("commit %q (%s), want the checkout's HEAD %q", r.Commit, r.CommitOf, want)
	}
	if c, _, of := checkout(t.TempDir()); c != "" || of != "" {
		t.Errorf("a folder outside the checkout: commit %q (%s), want none", c, of)
	}
}
