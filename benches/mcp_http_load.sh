#!/usr/bin/env bash
# MCP over HTTP under load: benches/mcp_http_load.py with the official MCP Python SDK, from the venv
# tests/mcp/run.sh uses (made here when missing). Loopback only.
#
#   bash benches/mcp_http_load.sh [--tree DIR] [--clients N] [--seconds S] [--session-calls C]
#
# Without --tree: a temporary copy of tests/fixtures/polyglot (indexed in place, then removed).
# RAGGREP_BIN picks the binary (default target/release/raggrep, else target/debug/raggrep).
# Ends with "N passed, M failed" (what must hold under load; no timing is asserted).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
bin="${RAGGREP_BIN:-}"
if [[ -z "$bin" ]]; then
  bin="$repo/target/release/raggrep"
  [[ -x "$bin" ]] || bin="$repo/target/debug/raggrep"
fi

tree=""
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --tree) tree="$2"; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
if [[ ! -x "$bin" ]]; then
  echo "raggrep binary not found at $bin (build it, or set RAGGREP_BIN)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
python="$(bash "$repo/tests/mcp/sdk_python.sh")"
work=""
trap '[[ -n "$work" ]] && rm -rf "$work"' EXIT
if [[ -z "$tree" ]]; then
  work="$(mktemp -d)"
  cp -r "$repo/tests/fixtures/polyglot" "$work/tree"
  tree="$work/tree"
fi
"$python" "$here/mcp_http_load.py" "$bin" "$tree" "${args[@]}"
