package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/workload/traceimport"
)

// countRE is a claim of how many extensions are registered: "the 21 registered
// schemes", "twelve built-in policies", "9 registered device presets".
var countRE = regexp.MustCompile(`(?i)\b([0-9]+|` + strings.Join(numberWords[1:], "|") + `)\s+(registered|built-in)\s+(schemes|policies|modes|sharing modes|commands|device presets|presets|suites|importers|trace formats|formats)\b`)

var numberWords = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
	"eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty",
	"twenty-one", "twenty-two", "twenty-three", "twenty-four", "twenty-five"}

// registeredCounts are how many of each extension the registries hold now.
func registeredCounts(t *testing.T) map[string]int {
	t.Helper()
	commands := 0
	for _, c := range newRoot().Commands() {
		if !c.Hidden && c.Name() != "help" && c.Name() != "completion" {
			commands++
		}
	}
	suites := slices.DeleteFunc(eval.Names(), func(n string) bool { return n == eval.AllName })
	return map[string]int{
		"schemes":  len(core.Schemes()),
		"policies": len(core.Names()),
		"modes":    len(core.ModeNames()),
		"commands": commands,
		"presets":  len(device.Specs()),
		"suites":   len(suites),
		"formats":  len(traceimport.Names()),
	}
}

// TestRegisteredCountsInTheDocs: every claim of the README and docs/ of the form
// "N registered schemes" (policies, modes, commands, device presets, suites,
// importers) says what the registries hold now. A claim of a past state belongs
// in a dated figure without "registered" ("the 17 schemes of 3 December").
func TestRegisteredCountsInTheDocs(t *testing.T) {
	counts := registeredCounts(t)
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(repoRoot, "README.md"))
	claims := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(joinWrapped(string(b)), "\n") {
			for _, m := range countRE.FindAllStringSubmatch(line, -1) {
				claims++
				n, what := countOf(m[1]), kindOf(m[3])
				if want := counts[what]; n != want {
					t.Errorf("%s: paragraph %d says %q; the registries hold %d %s: correct the number, or date the claim and drop %q",
						f, i+1, m[0], want, what, m[2])
				}
			}
		}
	}
	// The README's cluster paragraph makes one such claim; a test that finds none
	// reads nothing.
	if claims == 0 {
		t.Error("no claim of a registered count was found: the pattern no longer matches the docs")
	}
}

// TestCountRE: the pattern finds a claim in words and in digits, and reads it.
func TestCountRE(t *testing.T) {
	for text, want := range map[string][2]string{
		"each of the 21 registered schemes alone":    {"21", "schemes"},
		"Twelve built-in\npolicies":                  {"Twelve", "policies"},
		"the 12 registered device presets, in order": {"12", "presets"},
	} {
		m := countRE.FindStringSubmatch(joinWrapped(text))
		if m == nil || m[1] != want[0] || kindOf(m[3]) != want[1] {
			t.Errorf("%q: %q; want %v", text, m, want)
		}
	}
	if countOf("Twelve") != 12 || countOf("21") != 21 {
		t.Error("countOf")
	}
}

// joinWrapped joins the lines of each paragraph, so that a claim wrapped across
// two lines is read whole: the result has one line a paragraph.
func joinWrapped(s string) string {
	paras := strings.Split(s, "\n\n")
	for i, p := range paras {
		paras[i] = strings.ReplaceAll(p, "\n", " ")
	}
	return strings.Join(paras, "\n")
}

func countOf(s string) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return slices.Index(numberWords, strings.ToLower(s))
}

// kindOf is the registry a claim's noun counts.
func kindOf(noun string) string {
	switch strings.ToLower(noun) {
	case "sharing modes":
		return "modes"
	case "device presets":
		return "presets"
	case "importers", "trace formats":
		return "formats"
	}
	return strings.ToLower(noun)
}
