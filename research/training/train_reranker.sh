#!/usr/bin/env bash
# Runs train_reranker.py in the query tower's venv (train_query_tower.sh creates it), niced, on
# both cores (nothing else should run beside it: ~2.7 s a step of 8 groups here).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
home="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
py="$home/tools/qtower-venv/bin/python"
[[ -x "$py" ]] || { echo "train_reranker.sh: run research/training/train_query_tower.sh once first (it makes the venv)" >&2; exit 1; }
[[ -f "$home/training/pairs.jsonl" ]] || { echo "train_reranker.sh: run research/training/build_pairs.sh first" >&2; exit 1; }
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2
exec nice -n 19 "$py" "$here/train_reranker.py" "$@"
