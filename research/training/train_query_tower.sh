#!/usr/bin/env bash
# Runs train_query_tower.py in its own venv (jax[cpu] + the bootstrap's onnx/onnxruntime/tokenizers
# pins), niced. The venv is created on first use from PyPI with exact pins and --no-deps.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
home="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
venv="$home/tools/qtower-venv"
pins=(jax==0.10.2 jaxlib==0.10.2 numpy==2.4.6 scipy==1.17.1 ml_dtypes==0.6.0 opt_einsum==3.4.0
      onnx==1.23.2 protobuf==7.36.2 typing_extensions==4.16.0 tokenizers==0.23.3
      onnxruntime==1.31.1 flatbuffers==25.12.19 packaging==26.3)
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import jax, onnx, onnxruntime, tokenizers' 2>/dev/null; then
  python3 -m venv "$venv"
  nice -n 19 "$venv/bin/pip" install --disable-pip-version-check --progress-bar off --no-input \
    --only-binary=:all: --no-deps "${pins[@]}" >&2
fi
[[ -f "$home/models/all-minilm-l6-v2-fp32/model.onnx" ]] || { echo "train_query_tower.sh: run scripts/bootstrap.sh first" >&2; exit 1; }
[[ -f "$home/training/pairs.jsonl" ]] || { echo "train_query_tower.sh: run research/training/build_pairs.sh first" >&2; exit 1; }
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
exec nice -n 19 "$venv/bin/python" "$here/train_query_tower.py" "$@"
