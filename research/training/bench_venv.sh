# Sourced by the research wrappers that run a script in the benchmark's pinned tree-sitter venv
# (made by benches/retrieval/build.sh): sets `venv`, or stops the caller, named by its own file
# (`$0` is the sourcing script), with what to run first.
venv="${RAGGREP_HOME:-$HOME/.cache/raggrep}/tools/bench-venv"
if [[ ! -x "$venv/bin/python" ]]; then
  echo "$(basename "$0"): $venv missing; run benches/retrieval/build.sh first" >&2
  exit 1
fi
