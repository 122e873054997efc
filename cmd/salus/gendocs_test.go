package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestCLIReferenceIsCurrent: docs/cli is what gen-docs writes from the commands
// as they are now. A flag, a command or a help text changed without regenerating
// the reference fails here, naming the command that regenerates it.
func TestCLIReferenceIsCurrent(t *testing.T) {
	dir := t.TempDir()
	if _, err := genDocs(dir); err != nil {
		t.Fatal(err)
	}
	want := readPages(t, dir)
	got := readPages(t, filepath.Join("..", "..", "docs", "cli"))
	var stale []string
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			stale = append(stale, name+" is missing")
		case !bytes.Equal(g, w):
			stale = append(stale, name+" differs")
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			stale = append(stale, name+" documents no command")
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("docs/cli is stale (%s): regenerate it from the repository's root with\n\t%s",
			strings.Join(stale, "; "), genDocsCommand)
	}
}

func readPages(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pages[filepath.Base(f)] = b
	}
	return pages
}

// TestGenDocsIsHidden: gen-docs is for the project, not for users: salus --help
// does not list it, and the reference has no page for it.
func TestGenDocsIsHidden(t *testing.T) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "gen-docs") {
		t.Errorf("salus --help lists gen-docs:\n%s", out.String())
	}
	dir := t.TempDir()
	if _, err := genDocs(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "salus_gen-docs.md")); err == nil {
		t.Error("the reference has a page for gen-docs")
	}
}
