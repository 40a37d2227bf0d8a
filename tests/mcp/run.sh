#!/usr/bin/env bash
# The MCP server driven by the official MCP Python SDK (PyPI `mcp`) over stdio and Streamable HTTP.
# Installs the SDK once into a cached venv, runs tests/mcp/test_sdk.py against the real binary
# on a copy of tests/fixtures/polyglot, and ends with "N passed, M failed".
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="${RAGGREP_BIN:-$repo/target/debug/raggrep}"
MCP_SDK_VERSION=2.3.0
venv="${RAGGREP_HOME:-$HOME/.cache/raggrep}/tools/mcp-venv"

if [[ ! -x "$bin" ]]; then
  echo "raggrep binary not found at $bin (build it, or set RAGGREP_BIN)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
if ! "$venv/bin/python" -c "import mcp, importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP_SDK_VERSION')" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "mcp==$MCP_SDK_VERSION"
fi
exec "$venv/bin/python" "$here/test_sdk.py" "$bin" "$repo/tests/fixtures/polyglot"
