// Package deploy holds the files that run salus on Kubernetes: the image, the
// Helm chart (chart/salus), manifests and examples, and the kind end-to-end test
// (e2e/). Decode reads a manifest strictly into the Kubernetes API type its kind
// names, so that a misspelt or misplaced field fails in a test rather than on a
// cluster: this package's tests decode every manifest here, and those of the
// k8s module (../k8s/chart) every document the chart renders.
package deploy
