#!/usr/bin/env bash
# The project's test command (the README's, and what .ci/run calls): installs what the
# tests need on a fresh machine, then runs the Go tests and the Python client's tests.
#
#   bash scripts/test.sh                        # everything
#   SALUS_SKIP_INSTALL=1 bash scripts/test.sh   # no apt-get (tests needing torch or chromium skip)
#
# Works as root on a fresh Debian machine, non-interactively. Needs:
#   - python3-torch, python3-numpy for /usr/bin/python3: the real PyTorch jobs;
#   - python3-pip: the client's install test runs the README's pip install, offline;
#   - chromium: the report test renders index.html headless.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=/usr/bin/python3
missing=()
"$PY" -c 'import torch, numpy' >/dev/null 2>&1 || missing+=(python3 python3-torch python3-numpy)
"$PY" -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || missing+=(chromium)

if [ ${#missing[@]} -gt 0 ]; then
  if [ "${SALUS_SKIP_INSTALL:-0}" = 1 ]; then
    echo "test.sh: missing ${missing[*]} and SALUS_SKIP_INSTALL=1: the tests that need them skip" >&2
  elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "test.sh: installing ${missing[*]} with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
  else
    echo "test.sh: missing ${missing[*]} and this is not a root Debian machine: install them; the tests that need them skip" >&2
  fi
fi

# -p 1: one package at a time. The live package's tests run traces in real time
# and mostly wait (two of the five minutes, a tenth of them on a CPU); they are
# made to pass on a machine whose cores are busy (each calibrates the simulator
# with the lag it measured), so they run beside the other packages, their output
# kept apart and printed once they end.
# Every suite runs, whatever an earlier one did; the failures are reported together
# at the end, and the exit status is non-zero if any failed.
failed=()
live_out=$(mktemp)
trap 'rm -f "$live_out"' EXIT
echo "== go test ./live (beside the others; its output follows theirs)"
go test ./live >"$live_out" 2>&1 &
live_pid=$!
echo "== go test -p 1 (every package but live)"
go test -p 1 $(go list ./... | grep -v '/live$') || failed+=("go test -p 1 ./... (but live)")
echo "== go test ./live"
wait "$live_pid" || failed+=("go test ./live")
cat "$live_out"

# The k8s module's packages that need only the Kubernetes API types, not client-go,
# Helm or CEL (quick to build): the DRA driver's pure side and the strict decoding
# of deploy/'s manifests. They moved out of the root module so that salus needs
# no Kubernetes module; the rest of the k8s module is scripts/test-k8s.sh's.
echo "== k8s module: go vet and go test ./dra/... ./manifesttest/..."
(cd k8s && go vet ./dra/... ./manifesttest/... && go test ./dra/... ./manifesttest/...) ||
  failed+=("(cd k8s && go test ./dra/... ./manifesttest/...)")

echo "== python client tests ($PY -m unittest)"
"$PY" -m unittest discover -s client/python/tests || failed+=("$PY -m unittest discover -s client/python/tests")

if [ ${#failed[@]} -gt 0 ]; then
  echo "== FAILED: ${#failed[@]} suite(s):" >&2
  for f in "${failed[@]}"; do echo "  - $f" >&2; done
  exit 1
fi
echo "== all suites passed"
