package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/device"
)

// TestGeneratedSectionsAreCurrent: every generated section of docs/ is what
// gen-docs writes from the registries now. A preset registered, changed or
// removed without regenerating fails here, naming the command that regenerates.
func TestGeneratedSectionsAreCurrent(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := withSections(p, string(b))
		if err != nil {
			t.Fatal(err)
		}
		if want != string(b) {
			t.Errorf("%s: a generated section is stale: regenerate it from the repository's root with\n\t%s", p, genDocsCommand)
		}
		for _, m := range sectionRE.FindAllStringSubmatch(string(b), -1) {
			used[m[2]] = true
		}
	}
	for name := range sections {
		if !used[name] {
			t.Errorf("no page of docs/ has the generated section %q: put its markers where the list belongs (%s)", name, sectionBegin(name))
		}
	}
}

// withSections rewrites a stale section, leaves the rest of the page alone, and
// refuses a section it does not know, naming the file.
func TestWithSections(t *testing.T) {
	page := "before\n" + sectionBegin("devices") + "\n| stale |\n<!-- end of generated: devices -->\nafter\n"
	got, err := withSections("page.md", page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "before\n"+sectionBegin("devices")+"\n| preset |") || !strings.HasSuffix(got, "|\n<!-- end of generated: devices -->\nafter\n") || strings.Contains(got, "stale") {
		t.Errorf("rewritten:\n%s", got)
	}
	for _, s := range device.Specs() {
		if !strings.Contains(got, "| `"+s.Key+"` |") || !strings.Contains(got, s.Source) {
			t.Errorf("the devices section lacks %s or its source:\n%s", s.Key, got)
		}
	}
	again, err := withSections("page.md", got)
	if err != nil || again != got {
		t.Errorf("a current section changed: %v\n%s", err, again)
	}
	for bad, want := range map[string]string{
		"<!-- generated: nope (x); do not edit -->\n<!-- end of generated: nope -->\n":    `page.md: no generated section is named "nope": choose devices`,
		"<!-- generated: devices (x); do not edit -->\n<!-- end of generated: nope -->\n": `page.md: the generated section "devices" ends with the marker of "nope"`,
	} {
		if _, err := withSections("page.md", bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", bad, err, want)
		}
	}
}

// TestNoHandKeptDeviceLists: a page of the docs, the README or the chart's values
// that lists the device presets by hand goes stale when one is registered. Any
// run of three or more preset keys in a row (comma-, bar- or space-separated)
// outside a generated section fails: point to the command that prints them
// (salus simulate --help, salus serve --help) or use a generated section.
func TestNoHandKeptDeviceLists(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "deploy", "chart", "salus", "values.yaml"))
	keys := map[string]bool{}
	for _, s := range device.Specs() {
		keys[s.Key] = true
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := sectionRE.ReplaceAllString(string(b), "")
		for i, line := range strings.Split(text, "\n") {
			if run := longestKeyRun(line, keys); len(run) >= 3 {
				t.Errorf("%s: line %d lists device presets by hand (%s): point to salus simulate --help or salus serve --help, which list them from the registry",
					f, i+1, strings.Join(run, ", "))
			}
		}
	}
}

// longestKeyRun is the longest run of consecutive words of line that are keys.
func longestKeyRun(line string, keys map[string]bool) []string {
	words := strings.FieldsFunc(line, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-')
	})
	var best, cur []string
	for _, w := range words {
		if keys[w] {
			cur = append(cur, w)
			if len(cur) > len(best) {
				best = cur
			}
		} else {
			cur = nil
		}
	}
	return best
}
