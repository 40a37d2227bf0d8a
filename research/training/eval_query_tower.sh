#!/usr/bin/env bash
# Validation + TUNE check of the exported query tower against identity and the linear adapter
# (tools venv of scripts/bootstrap.sh; the TUNE function list from bench_functions.py). Niced.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
home="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
[[ -x "$home/tools/venv/bin/python" ]] || { echo "eval_query_tower.sh: run scripts/bootstrap.sh first" >&2; exit 1; }
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
if [[ ! -s "$home/training/bench/tune.jsonl" ]]; then
  [[ -x "$home/tools/bench-venv/bin/python" ]] || bash "$here/../../benches/retrieval/build.sh"
  nice -n 19 "$home/tools/bench-venv/bin/python" "$here/bench_functions.py" --split tune
fi
exec nice -n 19 "$home/tools/venv/bin/python" "$here/eval_query_tower.py" "$@"
