#!/usr/bin/env bash
# Builds the retrieval benchmark dataset (see build.py). Usage: build.sh [--quick] [--force] [-v]
# Creates (idempotently) a private venv with pinned tree-sitter wheels, then runs build.py.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${RAGGREP_HOME:-$HOME/.cache/raggrep}/tools/bench-venv"
# Bump the stamp whenever the pins change.
pins=(tree-sitter==0.25.2 tree-sitter-python==0.25.0 tree-sitter-rust==0.24.2
      tree-sitter-javascript==0.25.0 tree-sitter-typescript==0.23.2 tree-sitter-go==0.25.0)
stamp="$venv/.raggrep-pins"

py="${PYTHON:-python3}"
command -v "$py" >/dev/null 2>&1 || { echo "build.sh: error: $py not found (CPython 3.11 needed)" >&2; exit 1; }

if [[ ! -x "$venv/bin/python" || "$(cat "$stamp" 2>/dev/null)" != "${pins[*]}" ]]; then
  echo "build.sh: creating $venv" >&2
  rm -rf "$venv"
  "$py" -m venv "$venv" || { echo "build.sh: error: '$py -m venv' failed" >&2; exit 1; }
  "$venv/bin/python" -m pip install -q "${pins[@]}" >&2 \
    || { echo "build.sh: error: pip install of the pinned tree-sitter wheels failed" >&2; exit 1; }
  echo "${pins[*]}" > "$stamp"
fi

exec "$venv/bin/python" "$here/build.py" "$@"
