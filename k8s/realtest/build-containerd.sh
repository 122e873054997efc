#!/usr/bin/env bash
# Builds containerd, containerd-shim-runc-v2 and ctr at $CONTAINERD_VERSION
# (v2.4.2) from the Go module proxy, into $CACHE/bin, once per version: the
# container runtime of the kubelet stage of scripts/test-k8s-real.sh. runc is
# Debian's (apt-get install runc).
#
# Static, as containerd's release builds them: CGO off, without the btrfs
# snapshotter (cgo only; the stage uses overlayfs). One binary at a time,
# under nice, GOMAXPROCS=${GOMAXPROCS:-2}.
#
#   bash k8s/realtest/build-containerd.sh   # CACHE and CONTAINERD_VERSION from the environment
set -euo pipefail
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.4.2}
CACHE=${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/salus-k8s-real/containerd-$CONTAINERD_VERSION}
export GOMAXPROCS=${GOMAXPROCS:-2} CGO_ENABLED=0 GOBIN=$CACHE/bin GOFLAGS=
mod=github.com/containerd/containerd/v2
ld="-s -w -X $mod/version.Version=$CONTAINERD_VERSION -X $mod/version.Package=$mod"
mkdir -p "$CACHE/bin"
for c in containerd containerd-shim-runc-v2 ctr; do
  [ -x "$CACHE/bin/$c" ] && continue
  echo "build: $c $CONTAINERD_VERSION ($(date -u +%H:%M:%S))"
  start=$(date +%s)
  # go install writes the binary only when the build succeeded.
  nice -n 19 go install -trimpath -tags 'urfave_cli_no_docs no_btrfs osusergo netgo static_build' \
    -ldflags "$ld" "$mod/cmd/$c@$CONTAINERD_VERSION"
  echo "build: $c took $(( $(date +%s) - start ))s"
done
echo "build: containerd $CONTAINERD_VERSION in $CACHE/bin"
