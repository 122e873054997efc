package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The root module, salus and its tests, links no Kubernetes package: the DRA
// driver, its pure side (k8s/dra) and the strict decoding of deploy/'s manifests
// (k8s/manifesttest) are the k8s module's, which has its own go.mod.
func TestRootModuleLinksNoKubernetes(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH to list the imports")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-test", "github.com/salusgo/salus/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "k8s.io/") || strings.HasPrefix(pkg, "sigs.k8s.io/") {
			t.Errorf("the root module depends on %s: Kubernetes code belongs in the k8s module", pkg)
		}
	}
}

// The salus binary links no test support: the simulator's (sim/simtest) and the
// conformance checks (sim/conformance) are for tests only.
func TestBinaryLinksNoTestSupport(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH to list the imports")
	}
	out, err := exec.Command(goTool, "list", "-deps", "github.com/salusgo/salus/cmd/salus").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/salusgo/salus/") && (strings.HasSuffix(pkg, "test") || strings.HasSuffix(pkg, "/conformance")) {
			t.Errorf("salus links %s, which is test support", pkg)
		}
	}
}
