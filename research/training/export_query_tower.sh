#!/usr/bin/env bash
# Export the trained query tower (params.npz; `--role document`: the document tower) to ONNX fp32 + int8 in the bootstrap's tools venv
# (the same pinned onnx/onnxruntime/numpy that derive the default int8 model), then check its
# fidelity against the JAX encoder in the qtower venv. Niced, one thread.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
home="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
[[ -x "$home/tools/venv/bin/python" ]] || { echo "export_query_tower.sh: run scripts/bootstrap.sh first" >&2; exit 1; }
[[ -x "$home/tools/qtower-venv/bin/python" ]] || { echo "export_query_tower.sh: run train_query_tower.sh first" >&2; exit 1; }
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
# The check reads the same tower and parameters as the export, and the TUNE function list.
if [[ ! -s "$home/training/bench/tune.jsonl" ]]; then
  [[ -x "$home/tools/bench-venv/bin/python" ]] || bash "$here/../../benches/retrieval/build.sh"
  nice -n 19 "$home/tools/bench-venv/bin/python" "$here/bench_functions.py" --split tune
fi
export_args=() verify=()
for ((i = 1; i <= $#; i++)); do
  j=$((i + 1))
  case ${!i} in
    --role | --params) export_args+=("${!i}" "${!j}"); verify+=("${!i}" "${!j}"); i=$j ;;
    --int8-mean-floor | --int8-min-slack) verify+=("${!i}" "${!j}"); i=$j ;;
    --out) export_args+=("${!i}" "${!j}"); verify+=(--export-json "${!j}"); i=$j ;;
    *) export_args+=("${!i}") ;;
  esac
done
nice -n 19 "$home/tools/venv/bin/python" "$here/export_query_tower.py" "${export_args[@]}"
exec nice -n 19 "$home/tools/qtower-venv/bin/python" "$here/verify_query_tower.py" "${verify[@]}"
