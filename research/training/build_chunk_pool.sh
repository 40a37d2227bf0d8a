#!/usr/bin/env bash
# Runs build_chunk_pool.py in the benchmark's pinned tree-sitter venv (made by benches/retrieval/build.sh)
# with the release raggrep binary (its walk and chunker make the chunks). Needs build_pairs.sh's output.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
source "$here/bench_venv.sh"
if [[ -z "${RAGGREP_BIN:-}" ]]; then
  (cd "$repo" && cargo build --release --locked --quiet)
fi
exec nice -n 19 "$venv/bin/python" "$here/build_chunk_pool.py" "$@"
