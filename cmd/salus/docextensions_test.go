package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/salusgo/salus/core"
	"github.com/salusgo/salus/device"
	"github.com/salusgo/salus/eval"
	"github.com/salusgo/salus/workload/traceimport"
)

// registeredExtensions are the names of every registered extension, by the
// page of the generated CLI reference (docs/cli) whose flags list them.
func registeredExtensions() map[string][]string {
	return map[string][]string{
		"salus_simulate.md":     append(append(append(core.Names(), core.ModeNames()...), device.Names()...), core.NodePlacementNames()...),
		"salus_eval.md":         append(eval.Names(), core.GPUPlacementNames()...),
		"salus_trace_import.md": traceimport.Names(),
	}
}

// missingFromReference lists the registered names that the generated pages
// under dir do not show, each as a word of the page (a name inside another,
// "fair" in "wfair", does not count).
func missingFromReference(dir string, want map[string][]string) ([]string, error) {
	var missing []string
	for page, names := range want {
		b, err := os.ReadFile(filepath.Join(dir, page))
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if !regexp.MustCompile(`(^|[^\w-])` + regexp.QuoteMeta(n) + `($|[^\w-])`).Match(b) {
				missing = append(missing, fmt.Sprintf("%s lacks %q", page, n))
			}
		}
	}
	return missing, nil
}

// TestEveryExtensionIsInTheReference: every registered policy, sharing mode,
// device preset, node and GPU placement, suite and importer is in the
// generated CLI reference, which the README and docs/ link to rather than
// copying the lists. One registered without regenerating the reference
// fails here (and TestCLIReferenceIsCurrent says how to regenerate).
func TestEveryExtensionIsInTheReference(t *testing.T) {
	dir := filepath.Join(repoRoot, "docs", "cli")
	missing, err := missingFromReference(dir, registeredExtensions())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range missing {
		t.Errorf("the generated reference %s: regenerate it with %s", m, genDocsCommand)
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "docs/cli/salus.md") {
		t.Errorf("README.md does not link the generated reference (docs/cli/salus.md)")
	}
	// The check can fail: a suite registered now is in no generated page.
	eval.Register(echoSuite{})
	defer eval.Unregister("echo-test")
	missing, err = missingFromReference(dir, registeredExtensions())
	if err != nil || len(missing) != 1 || !strings.Contains(missing[0], `"echo-test"`) {
		t.Errorf("with a suite registered and the reference not regenerated: %q, %v; want the suite missing", missing, err)
	}
}
