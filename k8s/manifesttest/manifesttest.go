// Package manifesttest decodes Kubernetes manifests strictly, for tests: Decode
// reads a manifest into the Kubernetes API type its kind names, so that a
// misspelt or misplaced field fails in a test rather than on a cluster. Its own
// tests decode every manifest of the repository's deploy/ directory (and e2e/),
// the chart's tests (../chart) every document the chart renders.
//
// It is test support and nothing else: no command links it, and it lives in the
// k8s module so that the root module, and the salus binary, need no Kubernetes
// API module.
package manifesttest

import (
	"bytes"
	"fmt"
	"os"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"
)

// Decode decodes one manifest into the Kubernetes type its kind names;
// a field the type does not have is an error.
func Decode(doc []byte) (any, error) {
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
		return nil, fmt.Errorf("kind %q has no decoding here: add its type to manifesttest.Decode", head.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s: %w", head.Kind, err)
	}
	return obj, nil
}

// ReadManifests decodes every document of a manifest file strictly; the error
// names the file and the document.
func ReadManifests(file string) ([]any, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var objs []any
	for i, doc := range bytes.Split(data, []byte("\n---\n")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, err := Decode(doc)
		if err != nil {
			return nil, fmt.Errorf("%s, document %d: %w", file, i+1, err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}
