#!/usr/bin/env bash
# Installs the release bundle like a new user on a clean machine and uses it: a fresh HOME, a
# PATH without cargo, python or pip, every proxy variable pointing at a closed port (any network
# use would fail), the bundle unpacked, moved elsewhere, and run from there: index and query a
# fixture (also with the bundle's reranker), the query model found, and `raggrep lsp` answering
# a search. Last line: "N passed, M failed".
#
#   bash tests/install/run.sh [dist/raggrep-<version>-linux-x64[-debug].tar.gz]
#   (no argument: $RAGGREP_TARBALL, else the bundle built around the debug binary first with
#   `scripts/package.sh --quick`)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if [[ $# -eq 0 && -n ${RAGGREP_TARBALL:-} ]]; then
  set -- "$RAGGREP_TARBALL"
fi
if [[ $# -eq 0 ]]; then
  if ! built="$(bash scripts/package.sh --quick)"; then
    echo "FAIL  scripts/package.sh --quick"
    echo "0 passed, 1 failed"
    exit 1
  fi
  set -- "$(grep '\.tar\.gz$' <<<"$built")"
fi
tarball="$(realpath "$1")"
passed=0
failed=0
ok() { passed=$((passed + 1)); printf 'ok    %s\n' "$1"; }
fail() { failed=$((failed + 1)); printf 'FAIL  %s\n' "$1"; [[ -n "${2:-}" ]] && printf '      %s\n' "${2:0:2000}"; }
check() { local name="$1"; shift; if "$@"; then ok "$name"; else fail "$name" "${detail:-}"; fi; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
home="$work/home"
tools="$work/tools"
mkdir -p "$home" "$tools"
# The only commands the new user's shell offers: enough to unpack, nothing to build with.
for tool in tar gzip sh bash cat mkdir mv ls; do ln -s "$(command -v "$tool")" "$tools/$tool"; done
user() {
  env -i HOME="$home" PATH="$tools" LANG=C.UTF-8 \
    http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 \
    HTTPS_PROXY=http://127.0.0.1:9 ALL_PROXY=http://127.0.0.1:9 no_proxy= NO_PROXY= "$@"
}
detail="$(user sh -c 'command -v cargo python3 python pip pip3 rustc' 2>&1)"
check "the user's PATH has no cargo, rustc, python or pip" bash -c "[[ -z '$detail' ]]"

start=$(date +%s.%N)
user tar -xzf "$tarball" -C "$home" 2>"$work/err"
unpacked="$(ls -d "$home"/raggrep-*-linux-x64 2>/dev/null | head -n 1)"
detail="$(cat "$work/err")"
check "the tarball unpacks into one raggrep-<version>-linux-x64 directory" bash -c "[[ -x '$unpacked/bin/raggrep' ]]"
# Installed somewhere else than where it was unpacked: only relative lookups can work.
mkdir -p "$home/opt"
user mv "$unpacked" "$home/opt/raggrep"
bin="$home/opt/raggrep/bin/raggrep"

# Completions and the manual page where shells and man look under the prefix.
share="$home/opt/raggrep/share"
detail="$(user bash -c "source '$share/bash-completion/completions/raggrep' && complete -p raggrep" 2>&1)"
check "the bundle's bash completion loads and completes raggrep" bash -c "[[ '$detail' == *' raggrep' ]]"
detail="$(head -c 300 "$share/man/man1/raggrep.1" 2>&1)"
check "the bundle has the manual page, zsh and fish completions" bash -c \
  "grep -q '^.TH raggrep 1' '$share/man/man1/raggrep.1' && head -1 '$share/zsh/site-functions/_raggrep' | grep -q '#compdef raggrep' && grep -q 'complete -c raggrep' '$share/fish/vendor_completions.d/raggrep.fish'"

cp -r tests/fixtures/polyglot "$home/project"
user sh -c "cd '$home/project' && '$bin' index . --json" >"$work/index.json" 2>"$work/err"
rc=$?
detail="rc=$rc $(cat "$work/index.json") $(cat "$work/err")"
check "index a project with the bundle's model and runtime (no network, no cache set up)" \
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["files"] >= 8 and s["embedded"] == s["chunks"] > 0, s' "$work/index.json"
seconds=$(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')")

user sh -c "cd '$home/project' && '$bin' query --json -k 3 'check that an API token has not expired'" >"$work/query.json" 2>"$work/err"
detail="$(cat "$work/query.json") $(cat "$work/err")"
check "query: the right function first" \
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; assert r[0]["location"] == "src/auth.py:19-25", r' "$work/query.json"

user sh -c "cd '$home/project' && '$bin' query --json --rerank -k 3 'check that an API token has not expired'" >"$work/rerank.json" 2>"$work/err"
detail="$(cat "$work/rerank.json") $(cat "$work/err")"
check "query --rerank: the bundle's reranker re-sorts, the right function first" \
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["reranked_by"] == "all-minilm-l6-v2-rerank-int8" and r["results"][0]["location"] == "src/auth.py:19-25", r' "$work/rerank.json"

user sh -c "cd '$home/project' && '$bin' db store 'banana bread baking instructions' recipe >/dev/null && '$bin' db store 'the goalkeeper saved a penalty' football >/dev/null && '$bin' db search --json 'how to bake with bananas'" >"$work/db.json" 2>"$work/err"
detail="$(cat "$work/db.json") $(cat "$work/err")"
check "db: the vector store finds its model (all-MiniLM-L6-v2 itself) in the bundle" \
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert isinstance(r, list) and r[0]["value"] == "recipe", r' "$work/db.json"

user "$bin" embed "hello" >"$work/embed.txt" 2>&1
detail="$(cat "$work/embed.txt")"
check "the bundle's query model is found and used" grep -q "query model: " "$work/embed.txt"
check "models and runtime come from the bundle, not a cache in HOME" \
  bash -c "[[ ! -e '$home/.cache/raggrep/models' && ! -e '$home/.cache/raggrep/runtime' ]]"

# The language server from the bundle: initialize, wait for the index, search, shut down.
detail=""
# The server gets the user's environment (no cargo or python on PATH, proxies pointing nowhere);
# the driver is the system's python, outside that PATH.
user "$(python3 -c 'import sys; print(sys.executable)')" tests/support/lsp_search.py "$bin" "$home/project" '{}' "$work/lsp.err" "multiply two matrices" >"$work/lsp.jsonl"
detail="$(tail -n 5 "$work/lsp.err") $(head -c 1000 "$work/lsp.jsonl")"
check "raggrep lsp from the bundle answers raggrep.search" \
  python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline())["results"]; assert r and r[0]["location"].startswith("lib/matrix.c:"), r' "$work/lsp.jsonl"

# A Rust user's `cargo install`: the binary alone, no share/raggrep beside it, an empty cache.
# Every command must say in one line where the model and runtime come from, and touch nothing.
mkdir -p "$home/.cargo/bin"
# A hard link: the same file under another path costs no disk (a copy of the debug binary once
# hit a full disk in CI); a copy where linking is not possible.
ln "$bin" "$home/.cargo/bin/raggrep" 2>/dev/null || cp "$bin" "$home/.cargo/bin/raggrep"
user sh -c "cd '$home/project' && '$home/.cargo/bin/raggrep' query 'multiply two matrices'" >"$work/out" 2>"$work/err"
rc=$?
detail="rc=$rc stdout=[$(cat "$work/out")] stderr=[$(cat "$work/err")]"
check "the binary alone (cargo install) fails with one line naming the bootstrap and the bundle's share/raggrep" \
  bash -c "[[ $rc -ne 0 && ! -s '$work/out' && \$(wc -l <'$work/err') -eq 1 ]] && grep -q 'scripts/bootstrap.sh' '$work/err' && grep -q 'share/raggrep' '$work/err'"

size=$(du -h "$tarball" | cut -f1)
unpacked_size=$(du -sh "$home/opt/raggrep" | cut -f1)
echo "      bundle: $size packed, $unpacked_size unpacked; unpack + first index of the fixture: ${seconds} s" >&2
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
