#!/usr/bin/env bash
# Prints the Python of the cached venv holding the official MCP Python SDK (PyPI `mcp`, pinned),
# making the venv first when it is missing or holds another version. One place for the tests
# (tests/mcp/run.sh) and the benchmarks (benches/mcp_http_load.sh, benches/run_all.sh).
set -euo pipefail
MCP_SDK_VERSION=2.3.0
venv="${RAGGREP_HOME:-$HOME/.cache/raggrep}/tools/mcp-venv"
if ! "$venv/bin/python" -c "import mcp, importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP_SDK_VERSION')" 2>/dev/null; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet "mcp==$MCP_SDK_VERSION" >&2
fi
echo "$venv/bin/python"
