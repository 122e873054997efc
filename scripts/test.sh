#!/usr/bin/env bash
# The project's test command (what CI runs): installs what the real PyTorch jobs
# need, then runs the Go tests and the Python client's tests.
#
#   bash scripts/test.sh            # everything
#   SALUS_SKIP_INSTALL=1 bash scripts/test.sh   # no apt-get (tests needing torch skip)
#
# Works as root on a fresh Debian machine, non-interactively. The Python side uses
# /usr/bin/python3 (Debian's python3-torch is installed for that interpreter).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=/usr/bin/python3

if ! "$PY" -c 'import torch, numpy' >/dev/null 2>&1; then
  if [ "${SALUS_SKIP_INSTALL:-0}" = 1 ]; then
    echo "test.sh: torch is not importable and SALUS_SKIP_INSTALL=1: the real-PyTorch tests will skip" >&2
  elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "test.sh: installing python3-torch python3-numpy with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends python3 python3-torch python3-numpy
  else
    echo "test.sh: $PY cannot import torch and this is not a root Debian machine: install python3-torch and python3-numpy; the real-PyTorch tests will skip" >&2
  fi
fi

# -p 1: one package at a time. The eval package runs real PyTorch jobs that keep the
# CPUs busy, and the replay package compares live timings with the simulator; run
# side by side on a small machine they would disturb each other.
echo "== go test -p 1 ./..."
go test -p 1 ./...

echo "== python client tests ($PY -m unittest)"
"$PY" -m unittest discover -s client/python/tests
