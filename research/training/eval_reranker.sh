#!/usr/bin/env bash
# The reranker on the engine's candidates: the fusion dataset's validation packages, then the
# benchmark's TUNE half (dumps written by fit_fusion.sh). Extra arguments go to both runs, e.g.
# --onnx ~/.cache/raggrep/training/reranker/all-minilm-l6-v2-rerank-int8 for the exported model.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
home="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
py="$home/tools/qtower-venv/bin/python"
fusion="$home/training/fusion"
for f in "$fusion/train-features.jsonl" "$fusion/tune-features.jsonl"; do
  [[ -f "$f" ]] || { echo "eval_reranker.sh: $f missing; run research/training/fit_fusion.sh first" >&2; exit 1; }
done
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2
echo "== validation packages (fusion dataset)"
nice -n 19 "$py" "$here/eval_reranker.py" --dump "$fusion/train-features.jsonl" --data "$fusion/retrieval" --split validation "$@"
echo "== TUNE half of the benchmark"
nice -n 19 "$py" "$here/eval_reranker.py" --dump "$fusion/tune-features.jsonl" --data "$home/bench/retrieval" "$@"
