// Package deploy holds the files that run salus on Kubernetes: the image, the
// Helm chart (chart/salus), manifests and examples, and the kind end-to-end test
// (e2e/). It has no Go code: the tests that decode every manifest here strictly
// into the Kubernetes API types are the k8s module's (../k8s/manifesttest, and
// ../k8s/chart for the documents the chart renders), so that the root module
// needs no Kubernetes API module.
package deploy
