// Package deploy holds the files that run salus on Kubernetes: the image, the
// Helm chart (chart/salus, rendered for the tests by package helmchart),
// manifests and examples, and the kind end-to-end test (e2e/). Its tests decode
// each manifest, and each document the chart renders, with the Kubernetes API
// types, so that a misspelt or misplaced field fails here rather than on a
// cluster. It has no code of its own.
package deploy
