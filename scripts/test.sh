#!/usr/bin/env bash
# The project's test command (the README's, and what .ci/run calls): installs what the
# tests need on a fresh machine, then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

# The report test renders index.html in headless Chromium (Debian's package).
if [ ! -x /usr/bin/chromium ] && ! command -v chromium >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q chromium
  else
    echo "scripts/test.sh: chromium is missing and cannot be installed here (needs apt-get as root); the report test will skip unless CI is set" >&2
  fi
fi

go test ./...
