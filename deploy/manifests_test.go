package deploy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/salusgo/salus/dra"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"
)

// decodeStrict decodes one manifest into the Kubernetes type its kind names;
// a field the type does not have is an error.
func decodeStrict(doc []byte) (any, error) {
	var head struct{ Kind string }
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return nil, err
	}
	var obj any
	switch head.Kind {
	case "Job":
		obj = &batchv1.Job{}
	case "DaemonSet":
		obj = &appsv1.DaemonSet{}
	case "Pod":
		obj = &corev1.Pod{}
	case "ServiceAccount":
		obj = &corev1.ServiceAccount{}
	case "ClusterRole":
		obj = &rbacv1.ClusterRole{}
	case "ClusterRoleBinding":
		obj = &rbacv1.ClusterRoleBinding{}
	case "DeviceClass":
		obj = &resourcev1.DeviceClass{}
	case "ResourceClaimTemplate":
		obj = &resourcev1.ResourceClaimTemplate{}
	case "ValidatingAdmissionPolicy":
		obj = &admissionv1.ValidatingAdmissionPolicy{}
	case "ValidatingAdmissionPolicyBinding":
		obj = &admissionv1.ValidatingAdmissionPolicyBinding{}
	default:
		return nil, fmt.Errorf("kind %q has no decoding here: add its type to decodeStrict", head.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s: %w", head.Kind, err)
	}
	return obj, nil
}

// manifests are the manifest files of this directory and of e2e/ (not the
// chart's values files).
func manifests(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"*.yaml", "e2e/*.yaml"} {
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
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var objs []any
	for i, doc := range bytes.Split(data, []byte("\n---\n")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, err := decodeStrict(doc)
		if err != nil {
			t.Fatalf("%s, document %d: %v", file, i+1, err)
		}
		objs = append(objs, obj)
	}
	return objs
}

// Every manifest here decodes, strictly (an unknown field is an error), into the
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
