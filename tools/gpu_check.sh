#!/usr/bin/env bash
# The GPU report in one call, for a session that has a GPU machine (see docs/measurements.md):
#
#     bash tools/gpu_check.sh          # from the repository root; results under $OUT
#
# Runs `python -m parlab gpu-report --quick` (~2 min on an H200), then the full report
# (~8 min at most), each writing JSON (rewritten after every section, so a run cut short
# keeps what it measured) and a text log under $OUT (default: ./gpu_check_out). Needs only
# torch >= 2.4; uses $PYTHON, else python, else python3. Exit status: the worse of the two.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/lib${PYTHONPATH:+:$PYTHONPATH}"
OUT="${OUT:-$PWD/gpu_check_out}"
mkdir -p "$OUT"
PY="${PYTHON:-$(command -v python || command -v python3)}"

"$PY" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "CUDA", torch.version.cuda)' | tee "$OUT/env.txt"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv >> "$OUT/env.txt" 2>&1 || true

"$PY" -m parlab gpu-report --quick --json "$OUT/quick.json" 2>&1 | tee "$OUT/quick.txt"
quick=${PIPESTATUS[0]}
"$PY" -m parlab gpu-report --json "$OUT/full.json" 2>&1 | tee "$OUT/full.txt"
full=${PIPESTATUS[0]}
echo "gpu_check: quick exit $quick, full exit $full; files in $OUT"
exit $(( quick > full ? quick : full ))
