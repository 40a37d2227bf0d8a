#!/usr/bin/env bash
# End-to-end test of the Helix client (editors/helix/languages.toml) in a real Helix against the
# real server.
#
#   bash editors/helix/test/run.sh
#
# Helix is Debian trixie's `hx` 25.01, run through trixie's own dynamic loader so that it works on
# an older host (it needs glibc 2.39). The packages are fetched with apt-get from the mirror this
# machine is already configured with (read from /etc/apt/sources.list.d/*.sources at run time),
# through a private sources list, config and state dir: the system's apt setup is not touched. The
# extracted root is cached under $RAGGREP_HOME/tools/helix-trixie (installed once; a marker file
# records the completed install). tmux comes from trixie as well, so the host needs only apt-get,
# dpkg-deb and the Debian archive keyring.
#
# With the project's snippet as ~/.config/helix/languages.toml (isolated HOME, PATH with only
# raggrep and sh), it checks `hx --health` for every configured language, then drives Helix in
# tmux on copies of the polyglot fixture: waits for the server to index, asks the workspace-symbol
# picker (space S) natural-language questions and reads the screen (first row, and all results
# unfiltered in the server's order), jumps to a result, runs :sh raggrep query and the
# "Find similar code" code action (space a); then, in a folder that is not a project, checks that
# Helix cannot answer the server's showMessageRequest and that :lsp-workspace-command
# raggrep.toggle / raggrep.reindex work; and, with no workspace marker, that Helix gives the
# server no root. See README.md, "Test". The last line is "N passed, M failed".
#
# Environment: RAGGREP_BIN (server binary; default target/release/raggrep of this checkout),
# RAGGREP_TARBALL (a release tarball: its binary, snippet and model instead, with an empty cache),
# RAGGREP_HOME (model cache; default ~/.cache/raggrep), HELIX_TEST_TIMEOUT (seconds each wait may
# take, default 60), KEEP_TMP=1 (keep the temporary workspaces and Helix logs). Screens are saved to
# target/helix-e2e/.
set -uo pipefail

HX_SUITE=trixie
HX_VERSION=25.01   # the Helix release the snippet is written for; the test asserts it
# hx and the libraries it needs from trixie (its loader among them); tmux and its libraries.
PACKAGES=(hx libc6 libgcc-s1 tmux libevent-core-2.1-7t64 libjemalloc2 libsystemd0 libcap2 libtinfo6 libstdc++6)
LANGUAGES=(rust python javascript jsx typescript tsx go java c cpp markdown ruby php c-sharp kotlin swift scala elixir lua bash zig haskell yaml toml json dart ocaml ocaml-interface r julia)

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
client="$(dirname "$here")"
repo="$(cd "$client/../.." && pwd)"
timeout_s="${HELIX_TEST_TIMEOUT:-60}"

passed=0
failed=0
ok() {
  echo "ok - $*"
  passed=$((passed + 1))
}
not_ok() {
  echo "not ok - $*"
  failed=$((failed + 1))
}
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
  exit $?
}
fail_setup() {
  echo "helix test: $*" >&2
  failed=$((failed + 1))
  finish
}

export RAGGREP_HOME="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
bin="${RAGGREP_BIN:-$repo/target/release/raggrep}"
[ -x "$bin" ] || fail_setup "raggrep binary not found at $bin (build it with cargo build --release, or set RAGGREP_BIN)"
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"
[ "$(uname -m)" = x86_64 ] || fail_setup "this test runs Debian's amd64 hx; the machine is $(uname -m)"
for tool in apt-get apt-config dpkg-deb; do
  command -v "$tool" >/dev/null || fail_setup "$tool is needed to fetch Helix (a Debian-based machine)"
done

# --- Helix (and tmux) from Debian trixie, cached ---------------------------------------------

tools="$RAGGREP_HOME/tools/helix-$HX_SUITE"
root="$tools/root"
libdir="$root/usr/lib/x86_64-linux-gnu"
marker="$root/.complete"
stamp="$HX_SUITE ${PACKAGES[*]}"

# private_apt_root: a private apt root on this machine's Debian archive.
# shellcheck source=../../../tests/support/debian_mirror.sh
source "$repo/tests/support/debian_mirror.sh"

install_helix() {
  local apt="$tools/apt" debs="$tools/debs" stage="$tools/root.partial" conf deb pkgs=()
  echo "installing Helix from Debian $HX_SUITE into $tools"
  conf="$(private_apt_root "$apt" "$HX_SUITE")" || return 1
  mkdir -p "$debs"
  APT_CONFIG="$conf" apt-get -q update || { echo "apt-get update ($HX_SUITE) failed"; return 1; }
  rm -f "$debs"/*.deb
  for deb in "${PACKAGES[@]}"; do pkgs+=("$deb/$HX_SUITE"); done
  (cd "$debs" && APT_CONFIG="$conf" apt-get -q download "${pkgs[@]}") || { echo "apt-get download failed"; return 1; }
  deb="$(ls "$debs"/hx_*.deb 2>/dev/null | head -n 1)"
  case "$(dpkg-deb -f "$deb" Version 2>/dev/null)" in
    "$HX_VERSION".*) ;;
    *) echo "$HX_SUITE's hx is $(dpkg-deb -f "$deb" Version 2>/dev/null), not $HX_VERSION.x"; return 1 ;;
  esac
  rm -rf "$stage"
  mkdir -p "$stage"
  for deb in "$debs"/*.deb; do
    dpkg-deb -x "$deb" "$stage" || { echo "cannot extract $deb"; return 1; }
    dpkg-deb -f "$deb" Package Version | sed 's/^[^:]*: //' | paste -sd' ' >>"$stage/PACKAGES"
  done
  rm -rf "$root"
  mv "$stage" "$root" || return 1
  echo "$stamp" >"$marker"
  rm -rf "$debs" "$apt/cache" "$apt/state/lists"
}

if [ "$(cat "$marker" 2>/dev/null)" != "$stamp" ]; then
  install_helix || fail_setup "could not install Helix from Debian $HX_SUITE"
fi

# Launchers: trixie's loader runs the binary with trixie's libraries. Only these processes use
# them (no LD_LIBRARY_PATH), so the language server Helix spawns runs on the system's libc.
tmp="$(mktemp -d "${TMPDIR:-/tmp}/raggrep-helix-test.XXXXXX")"
sock="raggrep-test-$$"
mkdir -p "$tmp/bin"
cat >"$tmp/bin/hx" <<EOF
#!/bin/sh
HELIX_RUNTIME='$root/usr/lib/hx/runtime' exec '$libdir/ld-linux-x86-64.so.2' --library-path '$libdir' '$root/usr/lib/hx/hx' "\$@"
EOF
# tmux runs pane commands with $SHELL (else the login shell, which may be nologin): use sh.
cat >"$tmp/tmux" <<EOF
#!/bin/sh
SHELL=/bin/sh exec '$libdir/ld-linux-x86-64.so.2' --library-path '$libdir' '$root/usr/bin/tmux' -u -L '$sock' -f /dev/null "\$@"
EOF
chmod +x "$tmp/bin/hx" "$tmp/tmux"
tmux_() { "$tmp/tmux" "$@"; }
cleanup() {
  tmux_ kill-server >/dev/null 2>&1
  [ "${KEEP_TMP:-0}" = 1 ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# With RAGGREP_TARBALL (the test command sets it): the release tarball unpacked, the snippet it
# ships (share/raggrep/helix/languages.toml) with `command` set to the bundle's binary, as its
# comment says, and an empty model cache: what a user of the tarball has.
snippet="$client/languages.toml"
# What `hx --health` lists for the server: "<command>: <resolved path>".
health_line="  ✓ raggrep: $tmp/bin/raggrep"
helix_raggrep_home="$RAGGREP_HOME"
if [ -n "${RAGGREP_TARBALL:-}" ]; then
  mkdir -p "$tmp/opt" "$tmp/empty-cache"
  tar -xzf "$RAGGREP_TARBALL" -C "$tmp/opt" || fail_setup "cannot unpack $RAGGREP_TARBALL"
  bundle="$(ls -d "$tmp"/opt/raggrep-*-linux-x64)"
  bin="$bundle/bin/raggrep"
  health_line="  ✓ $bin: $bin"
  helix_raggrep_home="$tmp/empty-cache"
  snippet="$tmp/languages.toml"
  sed "s|^command = \"raggrep\" |command = \"$bin\" |" "$bundle/share/raggrep/helix/languages.toml" >"$snippet"
  if grep -q "^command = \"$bin\"" "$snippet"; then
    ok "the release tarball's Helix snippet, pointed at its bin/raggrep (empty model cache)"
  else
    not_ok "the tarball's share/raggrep/helix/languages.toml has no 'command = \"raggrep\"' line to point at the bundle"
  fi
fi

# The server on PATH as `raggrep`, the name the snippet uses. PATH holds nothing else but sh (for
# :sh), so the languages' usual servers are "not found" wherever the test runs (Helix still starts
# raggrep).
ln -s "$bin" "$tmp/bin/raggrep"
ln -s "$(command -v sh)" "$tmp/bin/sh"

# An isolated home with the project's snippet as the user's languages.toml.
home="$tmp/home"
mkdir -p "$home/.config/helix" "$home/.cache" "$home/.local/share" "$home/.local/state"
cp "$snippet" "$home/.config/helix/languages.toml"
helix_env=(HOME="$home" XDG_CONFIG_HOME="$home/.config" XDG_CACHE_HOME="$home/.cache"
  XDG_DATA_HOME="$home/.local/share" XDG_STATE_HOME="$home/.local/state" PATH="$tmp/bin"
  RAGGREP_HOME="$helix_raggrep_home" LANG=C.UTF-8)
hx_() { env -i "${helix_env[@]}" TERM=xterm-256color "$tmp/bin/hx" "$@"; }
strip_ansi() { sed 's/\x1b\[[0-9;]*m//g'; }

# --- hx --version / --health -------------------------------------------------------------------

version="$(hx_ --version 2>&1)"
if [[ "$version" =~ ^helix\ ${HX_VERSION//./\\.}\.[0-9]+ ]]; then
  ok "$version (Debian: $(grep '^hx ' "$root/PACKAGES" | cut -d' ' -f2))"
else
  not_ok "hx --version: expected helix $HX_VERSION.x, got: $version"
fi

for lang in "${LANGUAGES[@]}"; do
  health="$(hx_ --health "$lang" 2>&1 | strip_ansi)"
  # The "Configured language servers:" block: one "  ✓ name: path" or "  ✘ name: ..." per server.
  servers="$(awk '/^Configured language servers:/ { on = 1; next } on && /^  / { print; next } { on = 0 }' <<<"$health")"
  last="$(tail -n 1 <<<"$servers")"
  if [ "$last" = "$health_line" ] && [ "$(wc -l <<<"$servers")" -ge 2 ]; then
    ok "hx --health $lang: raggrep found, after $(head -n -1 <<<"$servers" | sed 's/^  [^ ]* \([^:]*\):.*/\1/' | paste -sd, -)"
  else
    not_ok "hx --health $lang: raggrep not listed last and found"
    echo "$health" | sed 's/^/    /'
  fi
done

# --- Helix in tmux -------------------------------------------------------------------------------

out="$repo/target/helix-e2e"
mkdir -p "$out"
rm -f "$out"/*.txt

# The current session: its name, workspace and Helix log (set by start_helix).
session="" ws="" log="" screen=""
capture() { screen="$(tmux_ capture-pane -p -t "$session" 2>/dev/null)"; }
# wait_for REGEX: polls the screen until a line matches (true) or the timeout passes (false).
wait_for() {
  local deadline=$((SECONDS + timeout_s))
  while :; do
    capture
    grep -Eq -- "$1" <<<"$screen" && return 0
    [ "$SECONDS" -ge "$deadline" ] && return 1
    sleep 0.2
  done
}
# wait_log REGEX: polls the Helix log (it shows the LSP traffic with -v) the same way.
wait_log() {
  local deadline=$((SECONDS + timeout_s))
  until grep -Eq -- "$1" "$log" 2>/dev/null; do
    [ "$SECONDS" -ge "$deadline" ] && return 1
    sleep 0.2
  done
}
keys() { tmux_ send-keys -t "$session" "$@"; }
# close REGEX: if an overlay matching REGEX is on screen, Escape closes it, and this waits until
# it is gone, so that the next key cannot reach Helix in the same read as the Escape (ESC
# directly followed by a key is read as Alt+key).
close() {
  local deadline=$((SECONDS + timeout_s))
  capture
  grep -Eq -- "$1" <<<"$screen" || return 0
  keys Escape
  while capture && grep -Eq -- "$1" <<<"$screen"; do
    [ "$SECONDS" -ge "$deadline" ] && return 1
    sleep 0.1
  done
}
picker='│ +kind +name +path'
show_failure() {
  echo "    --- screen"
  sed 's/^/    | /' <<<"$screen"
  if [ -f "$log" ]; then
    echo "    --- $(basename "$log") (tail)"
    tail -n 20 "$log" | cut -c1-300 | sed 's/^/    | /'
  fi
  if [ -f "$ws/.raggrep/raggrep.log" ]; then
    echo "    --- .raggrep/raggrep.log (tail)"
    tail -n 10 "$ws/.raggrep/raggrep.log" | sed 's/^/    | /'
  fi
}
# The picker's selected row: "│ > <kind> <name> <path>".
row() { printf '│ > [a-z]+ +%s +%s ' "$1" "${2//./\\.}"; }

# start_helix NAME MARKER FILE: a fresh copy of the fixture in $tmp/NAME with the directory
# MARKER in it (.git: a project; .helix: a Helix workspace that raggrep does not take for a
# project), and Helix (cwd: the copy) opening FILE in tmux session NAME. True once FILE shows.
start_helix() {
  session="$1" ws="$tmp/$1" log="$tmp/$1.log"
  cp -R "$repo/tests/fixtures/polyglot" "$ws"
  [ -z "$2" ] || mkdir -p "$ws/$2"
  {
    echo '#!/bin/sh'
    echo "cd '$ws' || exit 1"
    echo "env -i $(printf "'%s' " "${helix_env[@]}") TERM=\"\$TERM\" '$tmp/bin/hx' --log '$log' -v '$3'"
    echo 'echo "[hx exited with status $?]"'
    echo 'exec sleep 86400'
  } >"$tmp/$1.sh"
  chmod +x "$tmp/$1.sh"
  tmux_ new-session -d -x 200 -y 50 -s "$session" "$tmp/$1.sh" || fail_setup "cannot start tmux"
  if wait_for "^ NOR .*${3//./\\.}"; then
    ok "Helix opened $3 (${2:-no} workspace marker)"
  else
    not_ok "Helix did not open $3 (${2:-no} workspace marker)"
    show_failure
    return 1
  fi
}

# indexed [N]: polls the index from outside (the CLI reads what the server publishes) until N
# files (default: the fixture's) are chunked and embedded.
indexed() {
  local deadline=$((SECONDS + timeout_s)) status files pending chunks embedded nfiles="${1:-}"
  [ -n "$nfiles" ] || nfiles="$(find "$repo/tests/fixtures/polyglot" -type f | wc -l)"
  while :; do
    status="$("$bin" status --root "$ws" --json 2>/dev/null)"
    files="$(grep -o '"files":[0-9]*' <<<"$status" | cut -d: -f2)"
    pending="$(grep -o '"pending":[0-9]*' <<<"$status" | cut -d: -f2)"
    chunks="$(grep -o '"chunks":[0-9]*' <<<"$status" | cut -d: -f2)"
    embedded="$(grep -o '"embedded":[0-9]*' <<<"$status" | cut -d: -f2)"
    if [ "${files:-0}" -eq "$nfiles" ] && [ "${pending:-1}" -eq 0 ] && [ "${chunks:-0}" -gt 0 ] && [ "$embedded" = "$chunks" ]; then
      ok "the server indexed the workspace ($files files, $chunks chunks)"
      return 0
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      not_ok "the server did not index the workspace within ${timeout_s}s (status: ${status:-none})"
      capture
      show_failure
      return 1
    fi
    sleep 0.2
  done
}

# ask QUERY SYMBOL PATH: opens the workspace-symbol picker, types the question, and waits until
# SYMBOL (in PATH) is the picker's first, selected row.
ask() {
  close "$picker"
  keys Space
  keys S
  if ! wait_for "$picker"; then
    not_ok "space S did not open the workspace-symbol picker"
    show_failure
    return 1
  fi
  keys -l "$1"
  if wait_for "$(row "$2" "$3")" && grep -q "│ $1 " <<<"$screen"; then
    ok "space S \"$1\": $2 ($3) is the first result"
  else
    not_ok "space S \"$1\": $2 ($3) is not the first result"
    show_failure
    return 1
  fi
}

# unfiltered QUERY: the picker on screen lists every result the server returns for QUERY, in the
# server's order (the CLI's answer from the same index: named hits, k = 20 as in workspace/symbol).
# Polls, since results for a prefix of the question may still be on screen for a moment.
unfiltered() {
  local expected count names shown missing deadline=$((SECONDS + timeout_s))
  expected="$("$bin" query --root "$ws" --json -k 20 "$1" 2>/dev/null)"
  count="$(grep -o '"symbol":' <<<"$expected" | wc -l)"
  names="$(grep -o '"symbol":"[^"]*"' <<<"$expected" | sed 's/^"symbol":"//; s/"$//')"
  while :; do
    capture
    shown="$(sed -n "s/^.*│ $1 *\([0-9]*\)\/\([0-9]*\) .*/\1 \2/p" <<<"$screen")"
    # The left pane's rows under the column header, as one text; each name must follow the last.
    missing="$(sed 's/││.*//' <<<"$screen" | sed -n '/│ *kind *name *path/,$p' | tr '\n' ' ' |
      NAMES="$names" awk '{
        n = split(ENVIRON["NAMES"], name, "\n"); text = $0; pos = 1
        for (i = 1; i <= n; i++) {
          j = index(substr(text, pos), " " name[i] " ")
          if (j == 0) { print name[i]; exit }
          pos += j + length(name[i])
        }
      }')"
    if [ "$count" -gt 0 ] && [ "$shown" = "$count $count" ] && [ -z "$missing" ]; then
      ok "space S \"$1\": all $count server results shown, unfiltered, in the server's order"
      return 0
    fi
    [ "$SECONDS" -ge "$deadline" ] && break
    sleep 0.2
  done
  not_ok "space S \"$1\": picker shows ${shown:-?} (matched/total), server returned $count${missing:+; out of order or missing: $missing}"
  show_failure
  return 1
}

# quit: :quit-all! exits Helix (and with it the server) cleanly.
quit() {
  close "$picker"
  keys -l ':qa!'
  keys Enter
  if wait_for '^\[hx exited with status 0\]'; then
    ok "Helix quit cleanly"
  else
    not_ok "Helix did not quit cleanly"
    show_failure
  fi
}

# 1. A project (.git): the picker, jumping to a result, the code action.
if start_helix project .git src/auth.py && indexed; then
  ask "load configuration from environment" loadConfig web/config.ts && unfiltered "load configuration from environment"
  ask "multiply two matrices" matmul lib/matrix.c && unfiltered "multiply two matrices"
  printf '%s\n' "$screen" >"$out/symbol-picker.txt"

  # Enter jumps to the selected symbol.
  keys Enter
  if wait_for '^ NOR .*lib/matrix\.c'; then
    ok "Enter opened lib/matrix.c"
  else
    not_ok "Enter did not open lib/matrix.c"
    show_failure
  fi

  # :sh runs the CLI on the index the server keeps; Helix shows its output in a popup.
  keys -l ":sh raggrep query \"'where do we validate tokens'\""
  keys Enter
  popup='^ +src/auth\.py:19 +[0-9.]+ +validate_token'
  if wait_for "$popup"; then
    ok ":sh raggrep query shows the CLI's answer (src/auth.py:19 validate_token)"
  else
    not_ok ":sh raggrep query did not show src/auth.py:19 validate_token"
    show_failure
  fi
  close "$popup"

  # space a lists the server's code action; running it sends workspace/executeCommand, whose
  # result Helix does not show (it only logs it).
  keys Space
  keys a
  if wait_for 'Find similar code'; then
    printf '%s\n' "$screen" >"$out/code-action.txt"
    ok "space a offers \"Find similar code\""
    keys Enter
    # The answer is the wire contract's SimilarResponse; Helix logs its keys sorted.
    if wait_log 'raggrep <- \{"jsonrpc":"2.0","result":\{.*"results":\[\{".*"source":\{[^}]*"location":"lib/matrix\.c:' &&
      grep -q '"method":"workspace/executeCommand","params":{"arguments":\[{[^]]*matrix\.c"}\],"command":"raggrep\.findSimilar"' "$log"; then
      ok "the code action ran raggrep.findSimilar and the server answered with results"
    else
      not_ok "the code action did not round-trip raggrep.findSimilar"
      capture
      show_failure
    fi
  else
    not_ok "space a did not offer \"Find similar code\""
    show_failure
  fi
  quit
fi

# 2. A folder that raggrep does not take for a project: the server asks with
# window/showMessageRequest, which Helix 25.01 does not implement, so nothing is indexed until
# `:lsp-workspace-command raggrep.toggle` turns indexing on (and remembers it).
if start_helix folder .helix src/auth.py; then
  if wait_log 'raggrep -> \{"jsonrpc":"2.0","error":\{"code":-32601,"message":"Method not found: window/showMessageRequest"' &&
    ! "$bin" status --root "$ws" --json >/dev/null 2>&1; then
    ok "not a project: Helix cannot answer the server's question (showMessageRequest); nothing indexed"
  else
    not_ok "not a project: expected Helix to refuse window/showMessageRequest and no index"
    capture
    show_failure
  fi
  keys -l ':lsp-workspace-command raggrep.toggle'
  keys Enter
  if wait_log 'raggrep <- \{"jsonrpc":"2.0","result":\{"roots":\[\{"enabled":true' &&
    grep -q '^enabled = true' "$ws/.raggrep/config.toml" 2>/dev/null; then
    ok ":lsp-workspace-command raggrep.toggle turned indexing on (saved in .raggrep/config.toml)"
  else
    not_ok ":lsp-workspace-command raggrep.toggle did not turn indexing on"
    capture
    show_failure
  fi
  if indexed && ask "remove duplicate items from a list" dedupeItems lib/unique.js; then
    # %path narrows the server's answer by the path column (Helix filters locally).
    keys -l ' %path web'
    if wait_for '│ remove duplicate items from a list %path web +3/18 '; then
      ok "space S \"... %path web\": only the 3 results in web/ remain"
    else
      not_ok "space S \"... %path web\" did not narrow to the 3 results in web/"
      show_failure
    fi
  fi

  # Helix reports only the files it writes itself (didSave, didChangeWatchedFiles): a file made
  # outside Helix is indexed after :lsp-workspace-command raggrep.reindex.
  printf 'def celsius_to_fahrenheit(degrees):\n    """Convert a temperature reading."""\n    return degrees * 9 / 5 + 32\n' >"$ws/src/units.py"
  close "$picker"
  keys -l ':lsp-workspace-command raggrep.reindex'
  keys Enter
  if wait_log 'raggrep <- \{"jsonrpc":"2.0","result":\{"queued":1\}'; then
    ok ":lsp-workspace-command raggrep.reindex queued the workspace"
    indexed "$(($(find "$repo/tests/fixtures/polyglot" -type f | wc -l) + 1))" &&
      ask "convert temperature units" celsius_to_fahrenheit src/units.py
  else
    not_ok ":lsp-workspace-command raggrep.reindex was not answered"
    capture
    show_failure
  fi
  quit
fi

# 3. No workspace marker at all (and none above $TMPDIR): Helix 25.01 starts the server with
# rootUri null and no workspace folders (only the deprecated rootPath), so nothing is indexed and
# the picker stays empty.
if start_helix bare "" src/auth.py; then
  if wait_log 'raggrep <- \{"jsonrpc":"2.0","method":"client/registerCapability"' &&
    grep -q 'raggrep -> {"jsonrpc":"2.0","method":"initialize",.*"rootUri":null,.*"workspaceFolders":\[\]' "$log"; then
    keys Space
    keys S
    wait_for "$picker" && keys -l "multiply two matrices"
    if wait_log 'raggrep <- \{"jsonrpc":"2.0","result":\[\],"id":[0-9]+\}' && wait_for '│ multiply two matrices +0/0 ' &&
      ! "$bin" status --root "$ws" --json >/dev/null 2>&1; then
      ok "no workspace marker: Helix sends no root (rootUri null, no folders); nothing indexed, space S empty"
    else
      not_ok "no workspace marker: expected no index and an empty picker"
      show_failure
    fi
  else
    not_ok "no workspace marker: expected initialize with rootUri null and no workspace folders"
    capture
    show_failure
  fi
  quit
fi

# 4. Server settings from [language-server.raggrep.config] (docs/lsp.md, "Settings"): Helix sends the
# table as initializationOptions, and the server applies it. Last, because it changes the
# user's languages.toml that every session above reads.
printf '\n[language-server.raggrep.config]\nexclude = ["lib/**"]\n' >>"$home/.config/helix/languages.toml"
if start_helix configured .git src/auth.py; then
  lib_files="$(find "$repo/tests/fixtures/polyglot/lib" -type f | wc -l)"
  if wait_log 'raggrep -> \{"jsonrpc":"2.0","method":"initialize","params":\{.*"initializationOptions":\{"exclude":\["lib/\*\*"\]\}' &&
    indexed "$(($(find "$repo/tests/fixtures/polyglot" -type f | wc -l) - lib_files))" &&
    ! "$bin" inspect --root "$ws" --json | grep -q '"path":"lib/'; then
    ok "[language-server.raggrep.config] exclude = [\"lib/**\"] reaches the server: lib/ is not indexed"
  else
    not_ok "[language-server.raggrep.config] did not reach the server (lib/ indexed, or no initializationOptions)"
    capture
    show_failure
  fi
  quit
fi

finish
