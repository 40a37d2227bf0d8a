#!/usr/bin/env bash
# TUNE-split check of the adapter: lists the benchmark functions (tree-sitter venv), then ranks
# them with and without the adapter (tools venv). Niced, one thread.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
home="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
[[ -x "$home/tools/venv/bin/python" ]] || { echo "eval_adapter.sh: run scripts/bootstrap.sh first" >&2; exit 1; }
if [[ ! -x "$home/tools/bench-venv/bin/python" ]]; then
  bash "$here/../../benches/retrieval/build.sh"
fi
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
nice -n 19 "$home/tools/bench-venv/bin/python" "$here/bench_functions.py" --split tune
exec nice -n 19 "$home/tools/venv/bin/python" "$here/eval_adapter.py" "$@"
