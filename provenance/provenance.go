// Package provenance says where a result came from: the build of salus that
// made it (module version, commit), the command line, the seeds, the sha256 of
// the traces it ran and the co-location model it used. results.json, sweep.json
// and sweep.csv carry it, so that an archived result can be traced back to what
// made it and two results can be told to come from the same inputs or not. It
// reads the binary's build information and the files it hashes; it runs nothing.
package provenance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/salusgo/salus/interference"
	"github.com/salusgo/salus/workload"
)

// The two things a trace's sha256 can be of.
const (
	// OfFile: the bytes of the trace file, as read (sha256sum FILE).
	OfFile = "file"
	// OfCSV: the canonical CSV of a generated trace, as salus trace gen writes
	// it (the Generated command; salus trace gen ... | sha256sum).
	OfCSV = "canonical csv"
)

// Record is where a result came from.
type Record struct {
	// Version is the module's release version, or "devel" for a build of a
	// working tree; Commit the VCS revision the binary was built from ("" when
	// the build recorded none: go run, go test, -buildvcs=false), Modified
	// whether the working tree had uncommitted changes; Go the toolchain.
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Modified bool   `json:"modified,omitempty"`
	// CommitOf says where Commit comes from: "build" (the binary's build
	// information) or "checkout" (the build recorded none, and the command
	// ran in a git checkout of this module: its HEAD and working tree).
	CommitOf string `json:"commit_of,omitempty"`
	Go       string `json:"go"`
	// Command is the command line, as salus parsed it: the command and the
	// flags that were given, with their values.
	Command []string `json:"command"`
	// Seeds are the seeds the result's runs used (of the generated trace, or of
	// the resampling of a trace file).
	Seeds []int64 `json:"seeds"`
	// Traces are the traces the result ran, each with its sha256.
	Traces []Trace `json:"traces,omitempty"`
	// Interference is the co-location model.
	Interference Model `json:"interference"`
	// Logs are the event logs a result was computed from (salus report), each
	// by the sha256 of its bytes.
	Logs []Trace `json:"event_logs,omitempty"`
	// Parts are the commands whose results this one puts together, when there
	// are several: the runs of a resumed sweep, in order, or a merge's shards.
	Parts [][]string `json:"parts,omitempty"`
}

// Trace is one trace a result ran.
type Trace struct {
	// Path is the trace file; empty for a generated trace.
	Path string `json:"path,omitempty"`
	// Generated is, for a generated trace, the command that writes it.
	Generated string `json:"generated,omitempty"`
	// SHA256 is the hex sha256 of what Of says: the file's bytes (OfFile) or
	// the generated trace's canonical CSV (OfCSV).
	SHA256 string `json:"sha256"`
	Of     string `json:"sha256_of"`
}

// Model is a co-location model: a built-in one by name (measured, rule), or a
// model file with its sha256.
type Model struct {
	Name   string `json:"name"`
	Path   string `json:"path,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// String is the model as a table cell: its name, or its file and sha256.
func (m Model) String() string {
	if m.Path == "" {
		return m.Name
	}
	return m.Path + " (sha256 " + m.SHA256 + ")"
}

// New is the record of this binary's build and the command line; the caller
// fills in the seeds, the traces and the model.
func New(command []string) Record {
	info, ok := debug.ReadBuildInfo()
	r := FromBuild(info, ok)
	if r.Commit == "" {
		r.Commit, r.Modified, r.CommitOf = checkout(".")
	}
	r.Command = command
	return r
}

// module is this module's path, as a checkout's go.mod names it.
const module = "github.com/salusgo/salus"

// checkout is the HEAD commit of the git checkout dir is in, and whether its
// tracked files have changes, where that checkout is this module's (a go run
// or go test of it, whose builds record no commit); "" elsewhere or without
// git. "checkout" says where it came from.
func checkout(dir string) (commit string, modified bool, of string) {
	git := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	top, err := git("rev-parse", "--show-toplevel")
	if err != nil {
		return "", false, ""
	}
	mod, err := os.ReadFile(filepath.Join(top, "go.mod"))
	if err != nil || !strings.HasPrefix(string(mod), "module "+module+"\n") {
		return "", false, ""
	}
	head, err := git("rev-parse", "HEAD")
	if err != nil {
		return "", false, ""
	}
	status, err := git("status", "--porcelain", "--untracked-files=no")
	return head, err == nil && status != "", "checkout"
}

// FromBuild is the build part of a record, from a binary's build information.
func FromBuild(info *debug.BuildInfo, ok bool) Record {
	r := Record{Version: "devel", Go: runtime.Version(), Seeds: []int64{}}
	if !ok || info == nil {
		return r
	}
	if info.GoVersion != "" {
		r.Go = info.GoVersion
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			r.Commit, r.CommitOf = s.Value, "build"
		case "vcs.modified":
			r.Modified = s.Value == "true"
		}
	}
	v := strings.TrimSuffix(info.Main.Version, "+dirty")
	// A build of a checkout carries "(devel)" or a pseudo-version that ends in
	// the commit (v0.0.0-TIME-COMMIT): neither is a release.
	short := r.Commit[:min(12, len(r.Commit))]
	if v != "" && v != "(devel)" && (short == "" || !strings.HasSuffix(v, "-"+short)) {
		r.Version = v
	}
	return r
}

// SameBuild says whether two records come from the same build; when not, it
// says how they differ.
func SameBuild(a, b Record) (bool, string) {
	if a.Version == b.Version && a.Commit == b.Commit && a.Modified == b.Modified {
		return true, ""
	}
	return false, fmt.Sprintf("salus %s and salus %s", a.BuildString(), b.BuildString())
}

// BuildString is the version and commit in one word: "devel (0123456789ab+dirty)".
func (r Record) BuildString() string {
	s := r.Version
	if r.Commit != "" {
		s += " (" + r.Commit[:min(12, len(r.Commit))]
		if r.Modified {
			s += "+dirty"
		}
		s += ")"
	}
	return s
}

// FileSHA256 is the hex sha256 of a file's bytes.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// File is a trace file's entry: its path and the sha256 of its bytes.
func File(path string) (Trace, error) {
	sum, err := FileSHA256(path)
	if err != nil {
		return Trace{}, err
	}
	return Trace{Path: path, SHA256: sum, Of: OfFile}, nil
}

// Generated is a generated trace's entry: the command that writes it and the
// sha256 of its canonical CSV (workload.Trace.WriteCSV, what that command writes).
func Generated(t *workload.Trace, command string) (Trace, error) {
	var buf bytes.Buffer
	if err := t.WriteCSV(&buf); err != nil {
		return Trace{}, err
	}
	sum := sha256.Sum256(buf.Bytes())
	return Trace{Generated: command, SHA256: hex.EncodeToString(sum[:]), Of: OfCSV}, nil
}

// ModelOf is the co-location model --interference names: a built-in one by its
// name ("" is today's rule), a file with its sha256.
func ModelOf(name string) (Model, error) {
	switch name {
	case "", interference.RuleName:
		return Model{Name: interference.RuleName}, nil
	case interference.BuiltinName:
		return Model{Name: interference.BuiltinName}, nil
	}
	sum, err := FileSHA256(name)
	if err != nil {
		return Model{}, fmt.Errorf("co-location model: %w", err)
	}
	return Model{Name: "file", Path: name, SHA256: sum}, nil
}
