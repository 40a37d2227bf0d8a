#!/usr/bin/env bash
# Installs what the end-to-end test of the VS Code extension needs, once (idempotent, cached):
#
#   bash editors/vscode/test/setup-e2e.sh        # prints the code-server directory on its last line
#
# - Debian's chromium (the browser that shows the workbench), libkrb5-dev (to build code-server's
#   kerberos module) and ripgrep (for code-server's search service), only if missing;
# - code-server 4.100.3 (VS Code 1.100.3 in a browser; the last version that runs on Node 20) from
#   the npm registry into ${RAGGREP_HOME:-~/.cache/raggrep}/tools/code-server-4.100.3, done by hand
#   because its install scripts would download things: it is installed with --ignore-scripts,
#   then its native modules are built from source with node-gyp against the system Node headers,
#   VS Code's own production dependencies are installed, and Debian's rg is put where
#   @vscode/ripgrep's download would have put its binary. A `.complete` marker ends a finished
#   install; an unfinished one is started over.
#
# Playwright (playwright-core, pinned) comes with the extension's devDependencies (npm ci).
set -euo pipefail

CODE_SERVER_VERSION=4.100.3
RAGGREP_HOME="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
dest="$RAGGREP_HOME/tools/code-server-$CODE_SERVER_VERSION"
marker="$dest/.complete"

log() { printf 'setup-e2e: %s\n' "$*" >&2; }

# --- Debian packages -------------------------------------------------------------------------
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v rg >/dev/null 2>&1 || missing+=(ripgrep)
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev)
for tool in make g++ python3; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v chromium >/dev/null || { log "chromium is still missing"; exit 1; }

# --- code-server -------------------------------------------------------------------------------
entry="$dest/node_modules/code-server/out/node/entry.js"
if [ -f "$marker" ] && [ -f "$entry" ]; then
  log "code-server $CODE_SERVER_VERSION already installed in $dest"
  echo "$dest"
  exit 0
fi

node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" = 20 ] || log "warning: code-server $CODE_SERVER_VERSION wants Node 20; this is Node $node_major"

started=$SECONDS
rm -rf "$dest"
mkdir -p "$dest"
npm_quiet=(--no-audit --no-fund --loglevel=error)

# Native modules are compiled here, never downloaded: node-pre-gyp (argon2) and prebuild-install
# (kerberos) honour build-from-source, and node-gyp uses the installed Node headers.
export npm_config_build_from_source=true
export npm_config_yes=true
if [ -f /usr/include/node/node.h ]; then
  export npm_config_nodedir=/usr
fi

log "npm install code-server@$CODE_SERVER_VERSION (scripts off)"
npm install --prefix "$dest" --no-save --ignore-scripts "${npm_quiet[@]}" "code-server@$CODE_SERVER_VERSION" >&2
cs="$dest/node_modules/code-server"
vs="$cs/lib/vscode"

log "building argon2"
(cd "$dest" && npm rebuild "${npm_quiet[@]}" argon2 >&2)

log "installing VS Code's production dependencies (scripts off)"
(cd "$vs" && npm install --omit=dev --ignore-scripts "${npm_quiet[@]}" >&2)
(cd "$vs/extensions" && npm install --omit=dev --ignore-scripts "${npm_quiet[@]}" >&2)

# Every dependency with a binding.gyp except Windows-only ones and @vscode/ripgrep (its install
# downloads rg; Debian's is used instead).
mapfile -t native < <(cd "$vs/node_modules" && find . -maxdepth 3 -name binding.gyp -not -path '*/node_modules/*/node_modules/*' \
  | sed 's|^\./||; s|/binding.gyp$||' | grep -v -e '^@vscode/windows-' -e '^@vscode/ripgrep$' | sort)
log "building native modules: ${native[*]}"
(cd "$vs" && npm rebuild "${npm_quiet[@]}" "${native[@]}" >&2)

log "placing Debian's rg as @vscode/ripgrep's binary"
mkdir -p "$vs/node_modules/@vscode/ripgrep/bin"
cp "$(command -v rg)" "$vs/node_modules/@vscode/ripgrep/bin/rg"

# What code-server's postinstall.sh does besides installing.
ln -sfn node_modules "$vs/node_modules.asar"
ln -sfn code-linux.sh "$vs/bin/remote-cli/code-server"
ln -sfn browser-linux.sh "$vs/bin/helpers/browser.sh"

for module in kerberos @vscode/spdlog node-pty native-watchdog; do
  (cd "$vs" && node -e "require('$module')") || { log "native module $module does not load"; exit 1; }
done
# --version writes a default config file and a data directory: keep them out of the real home.
probe="$dest/.probe-home"
HOME="$probe" XDG_CONFIG_HOME="$probe/config" XDG_DATA_HOME="$probe/data" node "$entry" --version >&2
rm -rf "$probe"

echo "code-server $CODE_SERVER_VERSION installed in $((SECONDS - started)) s" >"$marker"
log "done in $((SECONDS - started)) s"
echo "$dest"
