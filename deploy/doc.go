// Package deploy holds the files that run salus on Kubernetes: manifests and
// examples, kept beside a test that decodes each with the Kubernetes API types, so
// that a misspelt or misplaced field fails here rather than on a cluster. It has
// no code of its own.
package deploy
