#!/usr/bin/env bash
# The project's test command (the README's, and what .ci/run calls): installs what the
# tests need on a fresh machine, then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

go test ./...
