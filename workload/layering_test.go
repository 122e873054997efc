package workload

import (
	"os/exec"
	"strings"
	"testing"
)

// The workload packages (profiles, traces, the importers) sit below everything
// that runs them: they import nothing of the project but themselves and core,
// no device, engine, server or CLI package. A device is resolved by the caller
// (traceimport.Options.GPUFor). The import graph is go list's, tests left out.
func TestWorkloadImportsNothingAbove(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH to list the imports")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/salusgo/salus/workload/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const mod = "github.com/salusgo/salus"
	for _, pkg := range strings.Fields(string(out)) {
		rest, ours := strings.CutPrefix(pkg, mod+"/")
		if !ours || rest == "core" || rest == "workload" || strings.HasPrefix(rest, "workload/") {
			continue
		}
		t.Errorf("the workload packages depend on %s: an arrow upward (resolve it in the caller, as GPUFor does the device)", pkg)
	}
}
