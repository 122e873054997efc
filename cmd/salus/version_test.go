package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestBuildVersion(t *testing.T) {
	const rev = "050b1244a562fcad1b6fa118d799d2cab21ef9a0"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: "2026-11-30T00:02:42Z"}, {Key: "vcs.modified", Value: modified}}
	}
	for _, c := range []struct {
		name     string
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"go run or go test", "(devel)", nil, "devel"},
		{"no module version", "", nil, "devel"},
		{"checkout, clean", "v0.0.0-20261130000242-050b1244a562", vcs("false"), "devel (050b1244a562)"},
		{"checkout, modified", "v0.0.0-20261130000242-050b1244a562+dirty", vcs("true"), "devel (050b1244a562+dirty)"},
		{"checkout, Go before 1.24", "(devel)", vcs("true"), "devel (050b1244a562+dirty)"},
		{"tagged checkout", "v1.2.3", vcs("false"), "v1.2.3 (050b1244a562)"},
		{"go install module@v1.2.3", "v1.2.3", nil, "v1.2.3"},
	} {
		info := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: "github.com/salusgo/salus", Version: c.version}, Settings: c.settings}
		if got := buildVersion(info, true); got != c.want {
			t.Errorf("%s: buildVersion = %q, want %q", c.name, got, c.want)
		}
		if got, want := goVersion(info, true), "go1.99.1 "+runtime.GOOS+"/"+runtime.GOARCH; got != want {
			t.Errorf("%s: goVersion = %q, want %q", c.name, got, want)
		}
	}
	if got := buildVersion(nil, false); got != "devel" {
		t.Errorf("without build information: %q, want devel", got)
	}
	if got, want := goVersion(nil, false), runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH; got != want {
		t.Errorf("without build information: Go %q, want %q", got, want)
	}
}

func TestVersionCommandAndFlagAgree(t *testing.T) {
	cmd, err := run(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	flag, err := run(t, "--version")
	if err != nil {
		t.Fatal(err)
	}
	if cmd != flag || cmd != versionLine()+"\n" {
		t.Errorf("salus version printed %q, salus --version %q, want both %q", cmd, flag, versionLine()+"\n")
	}
	if !strings.HasPrefix(cmd, "salus ") || !strings.Contains(cmd, runtime.Version()) {
		t.Errorf("salus version printed %q: want the name, the version and %s", cmd, runtime.Version())
	}
	if _, err := run(t, "version", "extra"); err == nil {
		t.Error("salus version extra: no error")
	}
}
