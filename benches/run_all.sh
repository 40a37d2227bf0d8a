#!/usr/bin/env bash
# Runs every benchmark (full mode, about an hour on 2 cores) and writes BENCHMARKS.md: date,
# commit, machine (lscpu), then each table. Ratios within one run are what to compare; absolute
# times move with the machine's load.
#
#   bash benches/run_all.sh [--only SECTION,...] [TREE]
#   bash benches/run_all.sh --assemble    # only rebuild BENCHMARKS.md from the section files
#
# TREE: a ~100k-line source tree (default: tantivy 0.27's source from the cargo registry, copied
# to target/benchmarks/tree). Each section writes target/benchmarks/<section>.md headed by its own
# date and commit; BENCHMARKS.md is assembled from all section files present, so `--only`
# re-runs some sections and keeps the others' last results.
#
# Sections: retrieval retrieval-tune retrieval-test retrieval-fp32 variants embed cold query incremental lsp mcp mcp-load tokens ann scale micro crash vectordb
# (by --only as well: scoped lsp100k polite static)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

all=(retrieval retrieval-tune retrieval-test retrieval-fp32 variants embed cold query incremental lsp mcp mcp-load tokens ann scale micro crash vectordb)
only=""
tree=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --only) only="$2"; shift 2 ;;
    --assemble) only=none; shift ;;
    *) tree="$1"; shift ;;
  esac
done
sections=("${all[@]}")
if [[ -n $only ]]; then IFS=, read -r -a sections <<<"$only"; fi
[[ $only == none ]] && sections=()

out="$here/target/benchmarks"
mkdir -p "$out"
if [[ ${#sections[@]} -gt 0 ]]; then
  bash scripts/bootstrap.sh
  bash benches/retrieval/build.sh
  cargo build --release --locked
  cargo bench --locked --no-run
fi

if [[ -z $tree ]]; then
  tree="$out/tree"
  if [[ ! -d $tree ]]; then
    src="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/tantivy-0.27.0 | head -n1)"
    cp -r "$src" "$tree"
    mkdir -p "$tree/.git" # a project: the language server indexes it without asking
  fi
fi
# A name for the tree in headings: the tantivy copy, or the directory's own name.
tree_name="$(basename "$tree")"
[[ $tree == "$out/tree" ]] && tree_name="tantivy 0.27 source"
bin="$here/target/release/raggrep"
bench() { cargo bench --locked --bench "$@" 2>/dev/null; }
ensure_indexed() { [[ -f $tree/.raggrep/CURRENT ]] || "$bin" index "$tree" >&2; }
# The official MCP Python SDK, in the venv tests/mcp/run.sh uses.
mcp_python() {
  "$(bash tests/mcp/sdk_python.sh)" "$@"
}

run_section() {
  local name="$1"
  echo "== $name" >&2
  {
    echo "<!-- $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD) -->"
    case "$name" in
      retrieval)
        echo "## Retrieval quality"
        echo
        bench retrieval -- --json "$out/retrieval.json"
        ;;
      retrieval-tune | retrieval-test)
        # Issue 16: choices are made on TUNE; TEST is only reported (benches/retrieval/split.json).
        echo "## Retrieval quality, ${name#retrieval-} half of the benchmark"
        echo
        bench retrieval -- --split "${name#retrieval-}" --foreign --json "$out/$name.json"
        ;;
      retrieval-fp32)
        echo "## Retrieval quality, fp32 model (for the int8-vs-fp32 comparison)"
        echo
        bench retrieval -- --model all-minilm-l6-v2-fp32 --no-baseline
        ;;
      variants)
        echo "## Indexing variants (embedding header, chunk budget), all queries"
        echo
        echo "Default: file path + symbol path header, 224-token chunks (the \"Retrieval quality\" section)."
        echo
        for v in "--header symbol" "--header none" "--header symbol --chunk-tokens 128"; do
          echo "### \`$v\`"
          echo
          # shellcheck disable=SC2086
          bench retrieval -- $v | awk '/^\*\*all\*\*/ { f = 1; next } /^\*\*/ { f = 0 } f && /^\|/'
        done
        ;;
      embed)
        echo "## Embedding throughput"
        echo
        bench embed_throughput -- --chunks 400
        ;;
      cold)
        echo "## Cold index of $tree_name ($(find "$tree" -name '*.rs' -print0 | xargs -0 cat | wc -l) lines of Rust)"
        echo
        # Twice, without the embedding cache: first vectors published after 2 s of embedding
        # (the rule before 2026-11-24, as the baseline), then after the first batch (the default).
        for first in 2 0; do
          rm -rf "$tree/.raggrep"
          RAGGREP_EMBEDDING_CACHE=off /usr/bin/time -o "$out/cold-$first.time" -f "%e %M" \
            "$bin" index "$tree" --json --first-publish "$first" >"$out/cold-$first.json"
        done
        python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
print("| first vectors published | files | chunks | lexical results after | first semantic answer after | fully embedded after | chunks/s | wall | peak RSS |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for first, name in (("2", "after 2 s of embedding (before)"), ("0", "after the first batch (default)")):
    stats = json.loads(open(f"{out}/cold-{first}.json").read().strip().splitlines()[-1])
    wall, rss_kb = open(f"{out}/cold-{first}.time").read().split()[-2:]
    print(f"| {name} | {stats['files']} | {stats['chunks']} | {stats['seconds_to_lexical']:.1f} s "
          f"| {stats['seconds_to_semantic']:.1f} s | {stats['seconds']:.0f} s | {stats['chunks'] / stats['seconds']:.1f} "
          f"| {float(wall):.0f} s | {int(rss_kb) / 1024:.0f} MB |")
PY
        ;;
      query)
        ensure_indexed
        echo "## Query latency, HNSW recall, warm start ($tree_name)"
        echo
        cargo bench --locked --bench query_latency -- "$tree" 2>&1 | grep -vE '^\s*(Compiling|Finished|Running)'
        ;;
      incremental)
        ensure_indexed
        echo "## Incremental re-index from the command line ($tree_name)"
        echo
        bench cli_incremental -- "$tree"
        ;;
      lsp)
        ensure_indexed
        echo "## Language server ($tree_name)"
        echo
        bench lsp_latency -- "$tree" --in-place
        ;;
      mcp)
        ensure_indexed
        echo "## MCP tools over stdio ($tree_name, official Python SDK, client-side latency)"
        echo
        mcp_python benches/mcp_latency.py "$bin" "$tree" --rounds 3
        ;;
      mcp-load)
        ensure_indexed
        echo "## MCP over HTTP under load ($tree_name, 32 official Python SDK clients for 30 s)"
        echo
        echo '```'
        RAGGREP_BIN="$bin" bash benches/mcp_http_load.sh --tree "$tree" --clients 32 --seconds 30
        echo '```'
        ;;
      tokens)
        echo "## Tokens an agent reads before it sees the answer (retrieval benchmark queries)"
        echo
        python3 benches/tokens_to_answer.py "$bin" 2>/dev/null
        ;;
      ann)
        echo "## Vector search at scale (synthetic 384-d, 10k and 100k)"
        echo
        bench ann_scale -- --sizes 10000,100000 --queries 300
        ;;
      scoped)
        echo "## A save on a 100k-file tree: update scoped to the saved path vs walking the tree"
        echo
        bench scoped_update -- --files 100000 --rounds 10
        ;;
      lsp100k)
        # The tree the scoped section builds (target/bench-scoped), through the real server.
        echo "## The language server on a 100k-file tree"
        echo
        bench scoped_update -- --files 100000 --rounds 1 >/dev/null
        bench lsp_latency -- target/bench-scoped --rounds 20
        ;;
      polite)
        echo "## Searches while the server indexes: indexPriority normal vs low"
        echo
        bench polite_indexing
        ;;
      static)
        echo "## A static first tier (measured, not shipped), TUNE and TEST"
        echo
        for split in tune test; do
          rm -rf "${RAGGREP_HOME:-$HOME/.cache/raggrep}"/bench/indexes/*/full-*-static
          bench retrieval -- --split "$split" --static-tier | grep -A12 '^\*\*all'
        done
        ;;
      scale)
        echo "## A 100k-chunk index: warm start, memory, bytes per chunk"
        echo
        bench scale_index -- --chunks 100000 --keep "$out/scale100k"
        ;;
      micro)
        echo "## Micro-benchmarks (criterion)"
        echo
        echo '```'
        cargo bench --locked --bench micro -- --noplot 2>/dev/null | grep -E '^[a-z]|time:' | sed 's/^ *//'
        echo '```'
        ;;
      crash)
        echo "## Crash loop: kill -9 during indexing, 100 times"
        echo
        bench crash_loop -- --iterations 100
        ;;
      vectordb)
        echo "## Vector store (raggrep db) beside seed 002's stack (Python sqlite3 + PyPI sqlite-vec, same SQL)"
        echo
        bash tests/vectordb/interop.sh >/dev/null 2>&1 || true # installs the pinned sqlite-vec wheel once
        bench vectordb -- --sizes 1000,10000,100000 --queries 50
        ;;
      *) echo "unknown section $name" >&2; return 2 ;;
    esac
    echo
  } >"$out/$name.md.tmp"
  mv "$out/$name.md.tmp" "$out/$name.md"
}

for s in "${sections[@]}"; do run_section "$s"; done


{
  echo "# raggrep benchmarks"
  echo
  echo "Generated by \`bash benches/run_all.sh\` (assembled $(date -u +%Y-%m-%d) at commit $(git rev-parse --short HEAD);"
  echo "each section's own date and commit are in the comment above it). Machine:"
  echo
  echo '```'
  lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|L2|L3)' | cut -c1-160
  echo '```'
  echo
  for s in "${all[@]}"; do
    [[ -f $out/$s.md ]] && cat "$out/$s.md"
  done
} >"$out/BENCHMARKS.md"
cp "$out/BENCHMARKS.md" "$here/BENCHMARKS.md"
echo "wrote BENCHMARKS.md" >&2
