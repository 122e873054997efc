#!/usr/bin/env bash
# Builds kube-apiserver, kube-scheduler and kube-controller-manager (or the
# commands named as arguments, e.g. kubelet) at $K8S_VERSION (v1.37.2) from
# the Go module proxy, into $CACHE/bin, once per version.
#
# k8s.io/kubernetes's go.mod replaces its staging modules (k8s.io/api,
# client-go, ...) with ./staging paths its module zip lacks, so it cannot be
# built as a dependency as it is. A scratch module requires it and replaces
# each staging module with the published k8s.io/<name> v0.<minor>.<patch>,
# listed from the kubernetes go.mod's own replace block; the few staging
# modules not published (sample-cli-plugin, sample-controller: no command
# here imports them) are left out. Builds are CPU heavy: one binary at a
# time, under nice, GOMAXPROCS=${GOMAXPROCS:-2}.
#
#   bash k8s/realtest/build.sh        # CACHE and K8S_VERSION from the environment
#   bash k8s/realtest/build.sh kubelet
set -euo pipefail
K8S_VERSION=${K8S_VERSION:-v1.37.2}
CACHE=${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/salus-k8s-real/$K8S_VERSION}
export GOMAXPROCS=${GOMAXPROCS:-2} CGO_ENABLED=0 GOFLAGS=-mod=mod
staging=v0.${K8S_VERSION#v1.}
cmds=${*:-kube-apiserver kube-scheduler kube-controller-manager}

missing=""
for c in $cmds; do [ -x "$CACHE/bin/$c" ] || missing="$missing $c"; done
if [ -z "$missing" ]; then
  echo "build: cached in $CACHE/bin"; exit 0
fi

src=$CACHE/src
mkdir -p "$src" "$CACHE/bin"
cd "$src"
if [ ! -f go.mod ]; then
  go mod download k8s.io/kubernetes@"$K8S_VERSION"
  kmod=$(go mod download -json k8s.io/kubernetes@"$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
  {
    echo "// Scratch module: builds the Kubernetes control plane from the module proxy."
    echo "module salus.local/k8s-real-build"
    echo
    grep -E '^(go|godebug) ' "$kmod"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    sed -n '/^replace (/,/^)/p' "$kmod" | awk '/=>/{print $1}' | while read -r m; do
      if go list -m -versions "$m" | tr ' ' '\n' | grep -qx "$staging"; then
        echo "	$m => $m $staging"
      else
        echo "build: $m has no $staging on the proxy; left out (no control-plane command imports it)" >&2
      fi
    done
    echo ")"
  } > go.mod.new
  mv go.mod.new go.mod
fi
# One file per command pins its packages in go.mod (go mod tidy), also for a
# command asked for after the module was made.
tidy=""
for c in $missing; do
  [ -f "tools_$c.go" ] && continue
  printf '//go:build tools\n\n// Package tools pins the commands built.\npackage tools\n\nimport _ "k8s.io/kubernetes/cmd/%s"\n' "$c" > "tools_$c.go"
  tidy=1
done
[ -z "$tidy" ] || nice -n 19 go mod tidy

# The version the binaries report (kubectl version, /version); the feature
# gates' defaults come from the binary's compiled-in version, not from these.
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
ld="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
ld="$ld -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
ld="$ld -X k8s.io/component-base/version.gitTreeState=clean"
ld="$ld -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
for c in $missing; do
  echo "build: $c ($(date -u +%H:%M:%S))"
  start=$(date +%s)
  nice -n 19 go build -trimpath -ldflags "$ld" -o "$CACHE/bin/$c.tmp" k8s.io/kubernetes/cmd/"$c"
  mv "$CACHE/bin/$c.tmp" "$CACHE/bin/$c"
  echo "build: $c took $(( $(date +%s) - start ))s"
done
