#!/usr/bin/env bash
# The k8s module's checks: the DRA driver (salus-dra-driver, a kubelet plugin,
# tested with the client-go fake clientset against a daemon started in the test;
# dra/, its pure side: ResourceSlices, claim configurations, CDI specs), the Helm
# chart rendered with the Helm library, the DeviceClass selectors compiled with
# the scheduler's CEL compiler, and deploy/'s manifests decoded strictly into the
# API types (manifesttest/; scripts/test.sh runs dra/ and manifesttest/ too).
# The module is apart from the root one so that salus carries no Kubernetes
# module (go list -deps ./... in the root names no k8s.io package), and so that the root
# checks stay quick: compiling client-go, Helm and the CEL libraries from a cold
# cache takes minutes (docs/kubernetes-pieces.md).
#
#   bash scripts/test-k8s.sh
set -euo pipefail
cd "$(dirname "$0")/../k8s"

unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet ./...
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
go test ./...
