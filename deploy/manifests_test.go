package deploy

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/dra"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"
)

// Every manifest here decodes, strictly (an unknown field is an error), into the
// Kubernetes type its kind names.
func TestManifestsDecodeStrictly(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests (%v)", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(data, []byte("\n---\n")) {
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			var head struct{ Kind string }
			if err := yaml.Unmarshal(doc, &head); err != nil {
				t.Fatalf("%s, document %d: %v", f, i+1, err)
			}
			var obj any
			switch head.Kind {
			case "Job":
				obj = &batchv1.Job{}
			case "DaemonSet":
				obj = &appsv1.DaemonSet{}
			case "Pod":
				obj = &corev1.Pod{}
			case "DeviceClass":
				obj = &resourcev1.DeviceClass{}
			case "ResourceClaimTemplate":
				obj = &resourcev1.ResourceClaimTemplate{}
			default:
				t.Fatalf("%s, document %d: kind %q has no decoding here: add its type to this test", f, i+1, head.Kind)
			}
			if err := yaml.UnmarshalStrict(doc, obj); err != nil {
				t.Errorf("%s, document %d (%s): %v", f, i+1, head.Kind, err)
			}
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
