package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The repository's root, from this package's directory.
const repoRoot = "../.."

// readmeMaxBytes is the README's budget: what it is, a picture, install, the
// quick starts, the commands, the results and the links; the rest is in docs/.
const readmeMaxBytes = 15000

// TestReadme: the README is under 15 KB, has a table of contents whose links are
// its sections, links every page of docs/, the CLI reference and the CHANGELOG, and lists every
// command in its table of commands.
func TestReadme(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if len(b) >= readmeMaxBytes {
		t.Errorf("README.md is %d bytes, over its %d: move the detail into a page of docs/", len(b), readmeMaxBytes)
	}

	// The table of contents: a "## Contents" list linking every other section.
	toc := section(readme, "Contents")
	if toc == "" {
		t.Error(`README.md has no "## Contents" section`)
	}
	linked := map[string]bool{}
	for _, l := range mdLinks(toc) {
		linked[l] = true
	}
	for _, h := range headingsOf(readme, 2) {
		if h != "Contents" && !linked["#"+slug(h)] {
			t.Errorf("README.md's table of contents has no link to its section %q (#%s)", h, slug(h))
		}
	}

	// Every page of docs/, and the CLI reference's root.
	links := map[string]bool{}
	for _, l := range mdLinks(readme) {
		links[strings.SplitN(l, "#", 2)[0]] = true
	}
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(repoRoot, "docs", "cli", "salus.md"), filepath.Join(repoRoot, "CHANGELOG.md"))
	for _, p := range pages {
		rel, _ := filepath.Rel(repoRoot, p)
		if !links[filepath.ToSlash(rel)] {
			t.Errorf("README.md does not link %s: every page of docs/ is linked from it", rel)
		}
	}

	// The table of commands: a row for each command salus has.
	cmds := section(readme, "Commands")
	for _, c := range newRoot().Commands() {
		if !c.IsAvailableCommand() {
			continue
		}
		row := "[`" + c.Name() + "`](docs/cli/salus_" + c.Name() + ".md)"
		if !strings.Contains(cmds, row) {
			t.Errorf("README.md's table of commands has no %s", row)
		}
	}
}

// TestDocLinks: every relative link of the README, the CHANGELOG and docs/
// (the CLI reference included) leads to a file that exists, and a #anchor to one of its
// headings, as GitHub names them.
func TestDocLinks(t *testing.T) {
	files := []string{filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "CHANGELOG.md")}
	for _, pat := range []string{"docs/*.md", "docs/cli/*.md"} {
		m, err := filepath.Glob(filepath.Join(repoRoot, pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(file string) map[string]bool {
		if a, ok := anchors[file]; ok {
			return a
		}
		a := map[string]bool{}
		if b, err := os.ReadFile(file); err == nil {
			seen := map[string]int{}
			for _, h := range headingsOf(string(b), 0) {
				s := slug(h)
				if n := seen[s]; n > 0 {
					a[s+"-"+strconv.Itoa(n)] = true
				} else {
					a[s] = true
				}
				seen[s]++
			}
		}
		anchors[file] = a
		return a
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, f)
		for _, l := range mdLinks(string(b)) {
			if regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`).MatchString(l) {
				continue // http:, https:, mailto:
			}
			path, anchor, _ := strings.Cut(l, "#")
			target := f
			if path != "" {
				target = filepath.Join(filepath.Dir(f), filepath.FromSlash(path))
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s: link %q: no such file", rel, l)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(target, ".md") && !anchorsOf(target)[anchor] {
				t.Errorf("%s: link %q: %s has no heading #%s", rel, l, filepath.Base(target), anchor)
			}
		}
	}
}

var (
	fenceRE      = regexp.MustCompile("(?ms)^ *```.*?^ *```[^\n]*$")
	inlineCodeRE = regexp.MustCompile("`[^`\n]*`")
	linkRE       = regexp.MustCompile(`\]\(([^()\s]+)\)`)
)

// mdLinks are the targets of a Markdown text's links and images, outside code.
func mdLinks(md string) []string {
	md = fenceRE.ReplaceAllString(md, "")
	md = inlineCodeRE.ReplaceAllString(md, "code")
	var out []string
	for _, m := range linkRE.FindAllStringSubmatch(md, -1) {
		out = append(out, m[1])
	}
	return out
}

// headingsOf lists a Markdown text's headings of the given level (0: all),
// outside code fences.
func headingsOf(md string, level int) []string {
	var out []string
	fence := false
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			continue
		}
		if fence || !strings.HasPrefix(l, "#") {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, "#"))
		if n > 6 || !strings.HasPrefix(l[n:], " ") || level != 0 && n != level {
			continue
		}
		out = append(out, strings.TrimSpace(l[n:]))
	}
	return out
}

// section is the text of a README's "## NAME" section, up to the next "## ".
func section(md, name string) string {
	_, rest, ok := strings.Cut(md, "\n## "+name+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// slug is a heading's anchor as GitHub makes it: lower case, punctuation
// dropped (hyphens and underscores kept), spaces made hyphens.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// designPageMaxBytes is the simulator's design page's budget: the design as it
// is now and its glossary; what was tried, and figures of a day, go to the
// CHANGELOG.
const designPageMaxBytes = 20000

// TestDocsSpeakOfTheProjectAsItIs: the docs and the README date no heading (by
// a day: "(5 December)") and no sentence by a sitting ("fifth session"); a
// session of the protocol is no sitting, and a figure may say when it was
// measured:
// dated figures and what was tried are the CHANGELOG's, which exists; the
// simulator's design page stays under its budget and has a glossary.
func TestDocsSpeakOfTheProjectAsItIs(t *testing.T) {
	if _, err := os.Stat(filepath.Join(repoRoot, "CHANGELOG.md")); err != nil {
		t.Errorf("no CHANGELOG.md: dated figures and what was tried go there (%v)", err)
	}
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(repoRoot, "README.md"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, f)
		for _, h := range headingsOf(string(b), 0) {
			if datedHeadingRE.MatchString(h) {
				t.Errorf("%s: heading %q is dated: say what the section is; a dated change goes to CHANGELOG.md", rel, h)
			}
		}
		for _, m := range sittingRE.FindAllString(string(b), -1) {
			t.Errorf("%s: %q dates the text by a sitting: speak of the project as it is, or move it to CHANGELOG.md", rel, m)
		}
	}
	design := filepath.Join(repoRoot, "docs", "simulator.md")
	b, err := os.ReadFile(design)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) >= designPageMaxBytes {
		t.Errorf("docs/simulator.md is %d bytes, over its %d: the design as it is now; history goes to CHANGELOG.md", len(b), designPageMaxBytes)
	}
	if !slices.Contains(headingsOf(string(b), 2), "Glossary") {
		t.Error(`docs/simulator.md has no "## Glossary"`)
	}
}

var (
	months         = `(January|February|March|April|May|June|July|August|September|October|November|December)`
	datedHeadingRE = regexp.MustCompile(`\b\d{1,2} ` + months + `\b|\b` + months + ` \d{1,2}\b|\d{4}-\d{2}-\d{2}`)
	sittingRE      = regexp.MustCompile(`(?i)\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth) (session|sitting)('s)?\b`)
)

// TestDatedTextREs: what the check above takes for a dated heading or sitting.
func TestDatedTextREs(t *testing.T) {
	for s, want := range map[string]bool{"Wakes within a stretch (5 December, fourth session)": true, "2026-12-05: Passive lanes": true, "Turns": false, "Gangs of 5 GPUs": false} {
		if datedHeadingRE.MatchString(s) != want {
			t.Errorf("datedHeadingRE on %q: %v, want %v", s, !want, want)
		}
	}
	for s, want := range map[string]bool{"before that day's fifth session, whose": true, "(second sitting)": true, "a session of the fast path": false, "ended in this session)": false} {
		if sittingRE.MatchString(s) != want {
			t.Errorf("sittingRE on %q: %v, want %v", s, !want, want)
		}
	}
}
