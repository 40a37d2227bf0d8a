#!/usr/bin/env bash
# Fits the learned fusion (server/src/search/learned_fusion.json) on training packages only:
#   1. build_fusion_data.sh: training packages in the benchmark's format (train/validation split);
#   2. the retrieval benchmark binary indexes them with the real engine and dumps every query's
#      hybrid candidates with their features (--dump-features), and the same for the TUNE half
#      of the benchmark (reported by fit_fusion.py, never used to choose);
#      (--foreign: plus as many other packages' questions, no answer here, for the confidence);
#   3. fit_fusion.py fits the weights and writes the JSON the engine embeds; fit_confidence.py
#      then calibrates the confidence on the same dumps (server/src/search/confidence.json).
# Then rebuild raggrep and run `cargo bench --bench retrieval -- --split tune` to measure.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
home="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
py="$home/tools/venv/bin/python"
[[ -x "$py" ]] || { echo "fit_fusion.sh: $py missing; run scripts/bootstrap.sh" >&2; exit 1; }
out="$home/training/fusion"
bash "$here/build_fusion_data.sh"
cd "$repo"
cargo bench --locked --bench retrieval -- --data "$out/retrieval" --no-baseline --foreign --dump-features "$out/train-features.jsonl" > "$out/train-bench.md"
cargo bench --locked --bench retrieval -- --split tune --no-baseline --foreign --dump-features "$out/tune-features.jsonl" > "$out/tune-bench.md"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
nice -n 19 "$py" "$here/fit_fusion.py" --train "$out/train-features.jsonl" \
  --report "tune=$out/tune-features.jsonl" --out "$repo/server/src/search/learned_fusion.json" "$@"
# The confidence is calibrated on the fusion's scores: a new fusion needs a new calibration.
nice -n 19 "$py" "$here/fit_confidence.py" --train "$out/train-features.jsonl" \
  --report "tune=$out/tune-features.jsonl" --out "$repo/server/src/search/confidence.json"
