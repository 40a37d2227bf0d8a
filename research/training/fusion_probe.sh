#!/usr/bin/env bash
# Runs fusion_probe.py in the tools venv of scripts/bootstrap.sh, niced, on one thread.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py="${RAGGREP_HOME:-$HOME/.cache/raggrep}/tools/venv/bin/python"
[[ -x "$py" ]] || { echo "fusion_probe.sh: $py missing; run scripts/bootstrap.sh" >&2; exit 1; }
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
exec nice -n 19 "$py" "$here/fusion_probe.py" "$@"
