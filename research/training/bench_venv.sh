# Sourced by the research wrappers that run a script in the benchmark's pinned tree-sitter venv
# (made by benches/retrieval/build.sh): sets `venv`, or stops the caller with what to run first.
# The caller sets `set -euo pipefail` and passes its own name for the message.
venv="${RAGGREP_HOME:-$HOME/.cache/raggrep}/tools/bench-venv"
if [[ ! -x "$venv/bin/python" ]]; then
  echo "$1: $venv missing; run benches/retrieval/build.sh first" >&2
  exit 1
fi
