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

# `ask`: a structural question is answered exactly; an open one becomes a prompt for any
# OpenAI-compatible LLM (printed here with --prompt, so the demo needs no LLM server).
if [[ "$target" == "$here" ]]; then
  printf '\n$ raggrep ask %q\n' "list the functions in server/src/ask/route.rs"
  "$bin" ask --root "$target" "list the functions in server/src/ask/route.rs"
  printf '\n$ raggrep ask --prompt --budget 400 %q\n' "how does ask choose between exact answers and retrieval?"
  "$bin" ask --root "$target" --prompt --budget 400 "how does ask choose between exact answers and retrieval?"
fi
