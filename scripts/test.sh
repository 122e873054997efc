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

# -p 1: one package at a time. The tests that replay traces on the live engine in
# real time mostly wait (the live package's, two minutes, a tenth of them on a CPU;
# four of cmd/salus's, another minute); they are made to pass on a machine whose
# cores are busy (the live package's calibrate the simulator with the lag they
# measured, cmd/salus's compare what does not depend on speed), so they run beside
# the other tests, their output kept apart and printed once they end.
# Every suite runs, whatever an earlier one did; the failures are reported together
# at the end, and the exit status is non-zero if any failed.
realtime='^(TestGoldenLiveStructure|TestLiveRunReport|TestReplayOnTwoGPUs|TestReplayPrintsTheSimulatorBeside)$'
failed=()
beside_dir=$(mktemp -d)
trap 'rm -rf "$beside_dir"' EXIT
# beside NAME CMD...: runs CMD in the background, its output to a file of its own
# and a FAILED line there if it fails.
beside() {
  local name=$1; shift
  { "$@" || echo "FAILED: $*"; } >"$beside_dir/$name" 2>&1 &
}
echo "== go test ./live and cmd/salus's live replays (beside the others; their output follows)"
beside live go test ./live
beside replays go test -run "$realtime" ./cmd/salus
echo "== go test -p 1 (every package but live, and cmd/salus but its live replays)"
go test -p 1 -skip "$realtime" $(go list ./... | grep -v '/live$') ||
  failed+=("go test -p 1 -skip '$realtime' ./... (but live)")
wait
echo "== go test ./live and cmd/salus's live replays"
cat "$beside_dir/live" "$beside_dir/replays"
while read -r line; do failed+=("${line#FAILED: }"); done < <(grep -h '^FAILED: ' "$beside_dir"/* || true)

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
