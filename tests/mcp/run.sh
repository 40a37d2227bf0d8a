#!/usr/bin/env bash
# The MCP server driven by the official MCP Python SDK (PyPI `mcp`) over stdio and Streamable HTTP.
# Installs the SDK once into a cached venv, runs tests/mcp/test_sdk.py against the real binary
# on a copy of tests/fixtures/polyglot, and ends with "N passed, M failed".
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="${RAGGREP_BIN:-$repo/target/debug/raggrep}"

if [[ ! -x "$bin" ]]; then
  echo "raggrep binary not found at $bin (build it, or set RAGGREP_BIN)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
python="$(bash "$here/sdk_python.sh")"
exec "$python" "$here/test_sdk.py" "$bin" "$repo/tests/fixtures/polyglot"
