#!/usr/bin/env bash
# Rewrite an exported MiniLM graph into the form raggrep ships (rewrite_graph.py's doc), in the
# bootstrap's tools venv (pinned onnx, onnxruntime, tokenizers). Niced, one thread.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
home="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
[[ -x "$home/tools/venv/bin/python" ]] || { echo "rewrite_graph.sh: run scripts/bootstrap.sh first" >&2; exit 1; }
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
exec nice -n 19 "$home/tools/venv/bin/python" "$here/rewrite_graph.py" "$@"
