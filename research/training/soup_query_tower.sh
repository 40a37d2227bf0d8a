#!/usr/bin/env bash
# Runs soup_query_tower.py in the query tower's venv (made by train_query_tower.sh). Niced.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
home="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
[[ -x "$home/tools/qtower-venv/bin/python" ]] || { echo "soup_query_tower.sh: run train_query_tower.sh first" >&2; exit 1; }
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
exec nice -n 19 "$home/tools/qtower-venv/bin/python" "$here/soup_query_tower.py" "$@"
