#!/usr/bin/env bash
# Exports the reranker (train_reranker.sh) to int8 ONNX in the bootstrap's tools venv.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
home="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
[[ -x "$home/tools/venv/bin/python" ]] || { echo "export_reranker.sh: run scripts/bootstrap.sh first" >&2; exit 1; }
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
exec nice -n 19 "$home/tools/venv/bin/python" "$here/export_reranker.py" "$@"
