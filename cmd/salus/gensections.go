package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/salusgo/salus/device"
)

// Generated sections: a list a page of docs/ shows that comes from a registry is
// written between two markers,
//
//	<!-- generated: NAME (go run ./cmd/salus gen-docs docs/cli); do not edit -->
//	...
//	<!-- end of generated: NAME -->
//
// gen-docs rewrites what lies between them from the registry (sections), so that
// registering an extension cannot leave a page stale; TestGeneratedSectionsAreCurrent
// fails, naming that command, when a page's section differs from what it writes.

// sections are the generators of the generated sections, by name.
var sections = map[string]func() string{
	"devices": deviceTable,
}

var sectionRE = regexp.MustCompile(`(?s)(<!-- generated: ([a-z-]+) \([^)]*\); do not edit -->\n)(.*?)(<!-- end of generated: ([a-z-]+) -->)`)

// sectionBegin is a section's opening marker.
func sectionBegin(name string) string {
	return "<!-- generated: " + name + " (" + genDocsCommand + "); do not edit -->"
}

// withSections is page (named file, for errors) with each generated section
// rewritten.
func withSections(file, page string) (string, error) {
	var err error
	out := sectionRE.ReplaceAllStringFunc(page, func(m string) string {
		g := sectionRE.FindStringSubmatch(m)
		name, end := g[2], g[5]
		gen, ok := sections[name]
		switch {
		case err != nil:
			return m
		case name != end:
			err = fmt.Errorf("%s: the generated section %q ends with the marker of %q: make both name the same section", file, name, end)
			return m
		case !ok:
			err = fmt.Errorf("%s: no generated section is named %q: choose %s", file, name, strings.Join(slices.Sorted(maps.Keys(sections)), ", "))
			return m
		}
		return sectionBegin(name) + "\n" + gen() + g[4]
	})
	return out, err
}

// refreshSections rewrites the generated sections of the Markdown pages of dir
// and returns the pages it changed.
func refreshSections(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		return nil, err
	}
	var changed []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		page, err := withSections(f, string(b))
		if err != nil {
			return nil, err
		}
		if page != string(b) {
			if err := os.WriteFile(f, []byte(page), 0o644); err != nil {
				return nil, err
			}
			changed = append(changed, f)
		}
	}
	return changed, nil
}

// deviceTable is the device presets as a Markdown table, in their order: the
// card's memory (usable), speed and where the speed comes from.
func deviceTable() string {
	var b strings.Builder
	b.WriteString("| preset | memory (usable) | speed | source |\n| --- | --- | --- | --- |\n")
	for _, s := range device.Specs() {
		d := s.Device
		fmt.Fprintf(&b, "| `%s` | %s GiB (%s) | %s | %s |\n", s.Key, gib(d.TotalMiB), gib(d.CapacityMiB),
			strconv.FormatFloat(d.Speed, 'f', -1, 64), s.Source)
	}
	return b.String()
}

// gib is MiB in GiB, with no more digits than it needs.
func gib(mib float64) string { return strconv.FormatFloat(mib/1024, 'f', -1, 64) }
