#!/usr/bin/env bash
# Tests of the VS Code extension:
#
#   bash editors/vscode/test/run.sh
#
# 1. build: npm ci, type check, esbuild bundle, `vsce package` → editors/vscode/raggrep.vsix
#    (the extension without a server), and what `vsce ls` would ship;
# 2. the platform package raggrep-linux-x64[-debug].vsix (scripts/package.sh: the extension with
#    its own server, model and runtime): only the files it should ship, within the 60 MB budget;
# 3. unit tests of the result mapping and server discovery (node --test);
# 4. setup for the end-to-end test (test/setup-e2e.sh: Debian's chromium, code-server 4.100.3;
#    cached under $RAGGREP_HOME/tools, ~1.5 min the first time, ~0 s after);
# 5. end-to-end: code-server with the platform .vsix installed like a user would (no
#    raggrep.server.path, no raggrep on PATH, an empty model cache), opened on a copy of
#    tests/fixtures/polyglot in headless Chromium driven by playwright-core (test/e2e/e2e.mjs);
#    screenshots in target/vscode-e2e/. Its team index scenario (raggrep.team) searches a real
#    PostgreSQL 17 + pgvector on loopback (tests/pg/postgres.sh: cached, ~0 s after the first
#    install) that this script starts before, stops after (also on failure or interruption), and
#    fills with one repository, gitlab.example/finance/ledger@trunk, pushed by the platform
#    package's own server (`raggrep push`). A team index that cannot be installed or started is a
#    failure; VSCODE_E2E=0 skips it with the rest of the end-to-end test.
# The last line is "N passed, M failed"; the exit code is non-zero on any failure.
#
# Environment: RAGGREP_PLATFORM_VSIX (the platform package; default: built here with
# `scripts/package.sh --quick`), RAGGREP_HOME (model cache; default ~/.cache/raggrep), VSCODE_E2E=0 (skip 4 and 5),
# E2E_TIMEOUT (seconds for the end-to-end run, 300), KEEP_TMP=1 (keep the temp workspace).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ext="$(dirname "$here")"
repo="$(cd "$ext/../.." && pwd)"

passed=0
failed=0
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
  exit $?
}
ok() {
  echo "ok   $*"
  passed=$((passed + 1))
}
fail() {
  echo "FAIL $*"
  failed=$((failed + 1))
}
step() { printf -- '--- vscode: %s\n' "$*"; }

export RAGGREP_HOME="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
cd "$ext" || exit 1
node --version

step "build and package"
t=$SECONDS
if npm ci --no-audit --no-fund --loglevel=error; then
  ok "npm ci"
else
  fail "npm ci"
  finish
fi
rm -f raggrep.vsix
if npm run --silent package >/tmp/raggrep-vsce.$$.log 2>&1 && [ -f raggrep.vsix ]; then
  ok "type check, bundle and vsce package ($(du -k raggrep.vsix | cut -f1) KB .vsix)"
else
  cat /tmp/raggrep-vsce.$$.log
  fail "type check, bundle and vsce package"
fi
rm -f /tmp/raggrep-vsce.$$.log
# The server-less package ships the bundle, the manifest and the docs, nothing else.
shipped="$(node_modules/.bin/vsce ls --no-dependencies 2>&1 | sort | tr '\n' ' ')"
expected="CHANGELOG.md LICENSE README.md dist/extension.js images/find-similar.png images/icon.png images/semantic-search.png package.json "
if [ "$shipped" = "$expected" ]; then
  ok "vsce ls ships only the bundle, manifest, docs and images"
else
  fail "vsce ls: expected [$expected], got [$shipped]"
fi
echo "  build: $((SECONDS - t)) s"

step "platform package (server, model and runtime inside)"
t=$SECONDS
platform_vsix="${RAGGREP_PLATFORM_VSIX:-}"
if [ -z "$platform_vsix" ]; then
  platform_vsix="$(bash "$repo/scripts/package.sh" --quick | grep '\.vsix$')"
fi
if [ -f "$platform_vsix" ]; then
  entries="$(unzip -Z1 "$platform_vsix" | sort)"
  unexpected="$(grep -vE '^(extension\.vsixmanifest|\[Content_Types\]\.xml|extension/(package\.json|readme\.md|changelog\.md|LICENSE\.txt|THIRD_PARTY\.md|dist/extension\.js|images/[a-z-]+\.png|bin/raggrep|share/raggrep/(models/all-minilm-l6-v2-code2-int8|runtime/onnxruntime-[0-9.]+)/[^/]+))$' <<<"$entries")"
  missing=""
  for needed in extension/bin/raggrep extension/dist/extension.js extension/share/raggrep/models/all-minilm-l6-v2-code2-int8/model.onnx \
    extension/share/raggrep/models/all-minilm-l6-v2-code2-int8/query-model.onnx extension/share/raggrep/models/all-minilm-l6-v2-code2-int8/tokenizer.json \
    extension/share/raggrep/models/all-minilm-l6-v2-code2-int8/LICENSE extension/share/raggrep/models/all-minilm-l6-v2-code2-int8/static-table.bin \
    extension/share/raggrep/runtime/onnxruntime-1.31.1/libonnxruntime.so.1.31.1; do
    grep -qxF "$needed" <<<"$entries" || missing="$missing $needed"
  done
  if [ -z "$unexpected" ] && [ -z "$missing" ]; then
    ok "the platform .vsix holds the extension, bin/raggrep, the model with its licence and static table, and the runtime, nothing else ($(wc -l <<<"$entries") entries)"
  else
    fail "platform .vsix contents: unexpected [${unexpected//$'\n'/ }], missing [$missing]"
  fi
  target="$(unzip -p "$platform_vsix" extension.vsixmanifest | grep -o 'TargetPlatform="[^"]*"')"
  [ "$target" = 'TargetPlatform="linux-x64"' ] && ok "the platform .vsix targets linux-x64" || fail "platform .vsix target: [$target]"
  # The 60 MB budget is the release package's, and scripts/package.sh refuses a release .vsix over
  # it. This package holds the debug server (14 MB compressed with unoptimised dependencies, the
  # release one 9.6 MB): the rest (extension, model, runtime) is held to the budget less 10 MB.
  server_bytes="$(unzip -v "$platform_vsix" extension/bin/raggrep | awk '$NF == "extension/bin/raggrep" { print $3 }')"
  rest_mb=$(( ($(stat -c %s "$platform_vsix") - ${server_bytes:-0}) / 1000000 ))
  if [ -n "$server_bytes" ] && [ "$rest_mb" -lt 50 ]; then
    ok "the platform .vsix without its server is under 50 MB, the 60 MB budget less the release server's 10 (${rest_mb} MB)"
  else
    fail "the platform .vsix without its server is ${rest_mb} MB (budget 50 MB; server entry: ${server_bytes:-not found})"
  fi
else
  fail "no platform .vsix (scripts/package.sh --quick)"
fi
echo "  platform package: $((SECONDS - t)) s"

step "unit tests"
unit_log="$(mktemp)"
npm run --silent test:unit 2>&1 | tee "$unit_log"
unit_pass="$(sed -n 's/^ℹ pass \([0-9]*\)$/\1/p' "$unit_log" | tail -1)"
unit_fail="$(sed -n 's/^ℹ fail \([0-9]*\)$/\1/p' "$unit_log" | tail -1)"
rm -f "$unit_log"
if [ -z "$unit_pass" ] || [ -z "$unit_fail" ]; then
  fail "unit tests did not report their counts"
else
  passed=$((passed + unit_pass))
  failed=$((failed + unit_fail))
fi

if [ "${VSCODE_E2E:-1}" = 0 ]; then
  echo "end-to-end test skipped (VSCODE_E2E=0)"
  finish
fi
if [ ! -f "$platform_vsix" ]; then
  fail "end-to-end test: no platform .vsix to install"
  finish
fi

step "end-to-end setup (cached)"
t=$SECONDS
setup_out="$(mktemp)"
if bash "$here/setup-e2e.sh" >"$setup_out"; then
  code_server_dir="$(tail -n 1 "$setup_out")"
  ok "end-to-end setup ($((SECONDS - t)) s): $code_server_dir"
else
  rm -f "$setup_out"
  fail "end-to-end setup (test/setup-e2e.sh)"
  finish
fi
rm -f "$setup_out"

# The team index for e2e.mjs's raggrep.team scenario: a PostgreSQL database holding one pushed
# repository. e2e.mjs gets its URL (TEAM_URL, no password) and PGPASSWORD, which code-server, its
# extension host and the server they start inherit, as a user's shell would give them.
step "end-to-end: a team index (PostgreSQL 17 + pgvector on loopback) with one pushed repository"
t=$SECONDS
team_tmp="$(mktemp -d "${TMPDIR:-/tmp}/raggrep-vscode-team.XXXXXX")"
# shellcheck source=../../../tests/support/team_index.sh
source "$repo/tests/support/team_index.sh"
stop_team_index() {
  team_index_stop "$team_tmp"
  rm -rf "$team_tmp"
}
trap stop_team_index EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
team_url=""
team_password=""
# The server the extension ships, with its model and runtime beside it, does the push.
start_team_index() {
  unzip -q "$platform_vsix" 'extension/bin/*' 'extension/share/*' -d "$team_tmp/platform" || return 1
  team_index_start "$team_tmp" "$team_tmp/platform/extension/bin/raggrep"
}
if start_team_index; then
  ok "team index: PostgreSQL $(team_index_pg psql "$team_tmp/pgdata" -d postgres -Atc 'SHOW server_version' 2>/dev/null) + pgvector on 127.0.0.1, gitlab.example/finance/ledger@trunk pushed ($((SECONDS - t)) s)"
else
  fail "team index: PostgreSQL 17 + pgvector started and gitlab.example/finance/ledger@trunk pushed (tests/pg/postgres.sh); the team scenario cannot run"
  team_url=""
fi

step "end-to-end: raggrep in VS Code 1.100.3 (code-server) in headless Chromium"
t=$SECONDS
results="$(mktemp)"
TEAM_URL="$team_url" \
  PGPASSWORD="$team_password" \
  CODE_SERVER_DIR="$code_server_dir" \
  VSIX="$platform_vsix" \
  BUNDLED=1 \
  FIXTURE="$repo/tests/fixtures/polyglot" \
  ARTIFACTS="$repo/target/vscode-e2e" \
  RESULTS="$results" \
  timeout $((${E2E_TIMEOUT:-300} + 60)) node "$here/e2e/e2e.mjs"
rc=$?
if [ -s "$results" ]; then
  read -r p f <"$results"
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
    fail "e2e.mjs exited with $rc"
  fi
else
  fail "e2e.mjs exited with $rc without results"
fi
rm -f "$results"
echo "  end-to-end: $((SECONDS - t)) s"

finish
