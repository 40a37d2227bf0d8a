#!/usr/bin/env bash
# Fits the search confidence (server/src/search/confidence.json) on training packages only:
#   1. build_fusion_data.sh: training packages in the benchmark's format (train/validation split);
#   2. the retrieval benchmark binary indexes them with the real engine and dumps every query's
#      hybrid candidates, plus as many queries of other packages (--foreign: no answer here);
#      the same for the TUNE half of the benchmark (reported, never used to choose);
#   3. fit_confidence.py fits the calibration and writes the JSON the engine embeds.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
home="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
py="$home/tools/venv/bin/python"
[[ -x "$py" ]] || { echo "fit_confidence.sh: $py missing; run scripts/bootstrap.sh" >&2; exit 1; }
out="$home/training/fusion"
bash "$here/build_fusion_data.sh"
cd "$repo"
cargo bench --locked --bench retrieval -- --data "$out/retrieval" --no-baseline --foreign --dump-features "$out/train-conf.jsonl" > "$out/train-conf-bench.md"
cargo bench --locked --bench retrieval -- --split tune --no-baseline --foreign --dump-features "$out/tune-conf.jsonl" > "$out/tune-conf-bench.md"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
nice -n 19 "$py" "$here/fit_confidence.py" --train "$out/train-conf.jsonl" \
  --report "tune=$out/tune-conf.jsonl" --out "$repo/server/src/search/confidence.json" "$@"
