#!/usr/bin/env bash
# The main job on a fresh machine: install model + runtime, build raggrep, index a real codebase
# and ask it questions.
#
#   bash scripts/demo.sh                      # this repository
#   bash scripts/demo.sh PATH ["QUERY" ...]   # any tree
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

bash scripts/bootstrap.sh
cargo build --release --locked
bin="$here/target/release/raggrep"

target="${1:-$here}"
shift || true
if [[ $# -eq 0 ]]; then
  set -- "where do we write files atomically" \
         "split camelCase identifiers into words" \
         "how are embeddings cached between runs"
fi

"$bin" index "$target"
"$bin" status --root "$target"
for q in "$@"; do
  printf '\n$ raggrep query %q\n' "$q"
  "$bin" query --root "$target" -k 5 "$q"
done
