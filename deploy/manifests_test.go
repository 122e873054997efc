package deploy

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
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
			default:
				t.Fatalf("%s, document %d: kind %q has no decoding here: add its type to this test", f, i+1, head.Kind)
			}
			if err := yaml.UnmarshalStrict(doc, obj); err != nil {
				t.Errorf("%s, document %d (%s): %v", f, i+1, head.Kind, err)
			}
			if job, ok := obj.(*batchv1.Job); ok && strings.Contains(f, "indexed") {
				if job.Spec.CompletionMode == nil || *job.Spec.CompletionMode != batchv1.IndexedCompletion {
					t.Errorf("%s: the sweep's Job must be Indexed, its shard is JOB_COMPLETION_INDEX", f)
				}
			}
		}
	}
}
