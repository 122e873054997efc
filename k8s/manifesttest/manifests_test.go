package manifesttest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/k8s/dra"
	batchv1 "k8s.io/api/batch/v1"
	resourcev1 "k8s.io/api/resource/v1"
)

// deployDir is the repository's deploy/ directory, from this package's.
const deployDir = "../../deploy"

// manifests are the manifest files of deploy/ and of deploy/e2e/ (not the
// chart's values files).
func manifests(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.yaml", "e2e/*.yaml"} {
		pattern = filepath.Join(deployDir, pattern)
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			if !strings.HasPrefix(filepath.Base(f), "values") {
				files = append(files, f)
			}
		}
	}
	if len(files) == 0 {
		t.Fatal("no manifests")
	}
	return files
}

// readManifests decodes every document of a manifest file strictly.
func readManifests(t *testing.T, file string) []any {
	t.Helper()
	objs, err := ReadManifests(file)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// Every manifest of deploy/ decodes, strictly (an unknown field is an error), into the
// Kubernetes type its kind names.
func TestManifestsDecodeStrictly(t *testing.T) {
	for _, f := range manifests(t) {
		for _, obj := range readManifests(t, f) {
			if tmpl, ok := obj.(*resourcev1.ResourceClaimTemplate); ok {
				checkClaimConfig(t, f, tmpl)
			}
			if job, ok := obj.(*batchv1.Job); ok && strings.Contains(f, "indexed") {
				if job.Spec.CompletionMode == nil || *job.Spec.CompletionMode != batchv1.IndexedCompletion {
					t.Errorf("%s: the sweep's Job must be Indexed, its shard is JOB_COMPLETION_INDEX", f)
				}
			}
		}
	}
}

// checkClaimConfig parses the template's opaque configuration as the driver does.
func checkClaimConfig(t *testing.T, file string, tmpl *resourcev1.ResourceClaimTemplate) {
	t.Helper()
	for _, c := range tmpl.Spec.Spec.Devices.Config {
		if c.Opaque == nil || c.Opaque.Driver != dra.DriverName {
			continue
		}
		if _, err := dra.ParseClaimConfig(c.Opaque.Parameters.Raw); err != nil {
			t.Errorf("%s: %s: its claim configuration: %v", file, tmpl.Name, err)
		}
	}
}
