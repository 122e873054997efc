#!/usr/bin/env bash
# GPU check: on a machine with an NVIDIA GPU and PyTorch (CUDA), run the overhead
# suite with real CUDA jobs and a short live trace of real CUDA jobs under pack and
# fair, check that every job stayed within its lane's memory cap, and write all
# results to one file.
#
#   bash scripts/gpu-check.sh [RESULTS_FILE]      # default gpu-check-results.txt
#
# Needs: go, nvidia-smi, and a python (PYTHON, default /usr/bin/python3) whose torch
# sees CUDA. Exit status 0 only when everything ran and every cap held.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-gpu-check-results.txt}
PY=${PYTHON:-/usr/bin/python3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

fail() { echo "gpu-check: $*" | tee -a "$OUT" >&2; exit 1; }

: >"$OUT"
{
  echo "# salus GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "## GPU"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || echo "nvidia-smi failed"
  echo "## PyTorch"
  "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)'
} >>"$OUT" 2>&1
"$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' || fail "$PY: torch does not see a CUDA device"

go build -o "$WORK/salus" ./cmd/salus
CAP=$("$PY" -c 'import torch; print(int(torch.cuda.get_device_properties(0).total_memory / 2**20 * 0.9))')

echo "## Overhead suite and live trace under pack and fair (CUDA, capacity $CAP MiB)" >>"$OUT"
"$WORK/salus" eval --suite overhead --engine live --worker pytorch --torch-device cuda --python "$PY" \
  --iterations 60 --warmup 10 --reps 5 --policy pack --policy fair --capacity-mib "$CAP" \
  --out "$WORK/out" >>"$OUT" 2>&1 || fail "the overhead suite failed (see above)"

echo "## Lane memory caps" >>"$OUT"
"$PY" - "$WORK/out/overhead.json" >>"$OUT" 2>&1 <<'PYEOF' || fail "a lane memory cap did not hold (see above)"
import json, sys
rep = json.load(open(sys.argv[1]))
ok = True
for run in rep.get("trace_runs", []):
    mem = run.get("memory") or {}
    if not mem:
        print(run["policy"], ": no memory figures (the jobs did not run on CUDA)"); ok = False
    for job, (peak, lane) in sorted(mem.items()):
        held = peak <= lane
        ok &= held
        print("%s %s: peak reserved %.0f MiB, lane %.0f MiB: %s" % (run["policy"], job, peak, lane, "held" if held else "EXCEEDED"))
print("all caps held" if ok else "SOME CAPS DID NOT HOLD")
print("## overhead.json"); print(json.dumps(rep, indent=1))
sys.exit(0 if ok else 1)
PYEOF
echo "gpu-check: done, results in $OUT"
