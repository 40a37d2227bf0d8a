#!/usr/bin/env bash
# Interoperability of `raggrep db` with design seed 002's own stack: Python's sqlite3 with the
# PyPI `sqlite-vec` package (Debian's /usr/bin/python3, whose sqlite3 can load extensions) and
# all-MiniLM-L6-v2 vectors computed in Python (the bootstrap's tools venv, research/training/
# embed.py's recipe). Installs the pinned, checksummed sqlite-vec wheel once under the tools
# cache; ends with "N passed, M failed".
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
bin="${RAGGREP_BIN:-$repo/target/debug/raggrep}"
home="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
SQLITE_VEC_VERSION=0.1.6
SQLITE_VEC_WHEEL=sqlite_vec-0.1.6-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.manylinux1_x86_64.whl
SQLITE_VEC_SHA256=823b0493add80d7fe82ab0fe25df7c0703f4752941aee1c7b2b02cec9656cb24
target="$home/tools/sqlite-vec-py/$SQLITE_VEC_VERSION"
venv_python="$home/tools/venv/bin/python"
system_python=/usr/bin/python3

fail() { echo "$1" >&2; echo "0 passed, 1 failed"; exit 1; }
[[ -x "$bin" ]] || fail "raggrep binary not found at $bin (build it, or set RAGGREP_BIN)"
[[ -x "$venv_python" ]] || fail "tools venv missing at $venv_python: run scripts/bootstrap.sh"
[[ -x "$system_python" ]] || fail "$system_python missing (Debian's python3: its sqlite3 can load extensions)"

if [[ ! -f "$target/sqlite_vec/__init__.py" ]]; then
  # The wheel is pure data for any CPython 3 (py3-none): download it with whichever pip there
  # is, check its sha256, unpack it (no pip needed for Debian's python, which may have none).
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
    --python-version 3.11 "sqlite-vec==$SQLITE_VEC_VERSION" -d "$tmp"
  echo "$SQLITE_VEC_SHA256  $tmp/$SQLITE_VEC_WHEEL" | sha256sum --check --quiet \
    || fail "sqlite-vec wheel checksum mismatch"
  mkdir -p "$target.partial"
  "$system_python" -m zipfile -e "$tmp/$SQLITE_VEC_WHEEL" "$target.partial"
  rm -rf "$target" && mv "$target.partial" "$target"
fi

PYTHONPATH="$target" exec nice "$system_python" "$here/interop.py" "$bin" "$venv_python"
