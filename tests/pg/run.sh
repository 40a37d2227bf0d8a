#!/usr/bin/env bash
# The team index against a real PostgreSQL 17 + pgvector 0.8.0 on loopback (tests/pg/postgres.sh:
# Debian trixie's packages through a private apt root, cached; started and stopped here).
#
# Roles as docs/team.md sets them up (scripts/team_roles.sql): a writer for CI, a read-only reader.
# Three repositories pushed (two are branches of one, sharing most chunks), searched across and
# per repository; pushed again after edits (only the change travels); a push killed mid-upload and
# the database killed mid-push, then pushed again (nothing lost, nothing twice), with a reader
# polling all along (it never sees half a push); bad URL, wrong password, a role that may not
# enable pgvector, a reader that tries to push, a server that is down: one clear line each, and no
# password anywhere in any output. Last line: "N passed, M failed".
#
# Env: RAGGREP_BIN (default target/debug/raggrep), RAGGREP_HOME (caches; default ~/.cache/raggrep).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
repo="$PWD"
bin="${RAGGREP_BIN:-$repo/target/debug/raggrep}"
pg() { bash "$repo/tests/pg/postgres.sh" "$@"; }
# ledger_repo: a second repository to push (gitlab.example/finance/ledger@trunk).
# shellcheck source=../support/team_index.sh
source "$repo/tests/support/team_index.sh"
passed=0
failed=0
ok() { passed=$((passed + 1)); printf 'ok    %s\n' "$1"; }
fail() { failed=$((failed + 1)); printf 'FAIL  %s\n' "$1"; [[ -n "${2:-}" ]] && printf '      %s\n' "${2:0:2000}"; }
check() { local name="$1"; shift; if "$@"; then ok "$name"; else fail "$name" "${detail:-}"; fi; }
finish() { echo "$passed passed, $failed failed"; [[ $failed -eq 0 ]]; exit $?; }
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1"; }

echo "==> PostgreSQL 17 + pgvector (installed once, cached)" >&2
if ! pg install >/dev/null; then
  fail "PostgreSQL 17 + pgvector install (tests/pg/postgres.sh install)"
  finish
fi

work="$(mktemp -d)"
data="$work/pgdata"
cleanup() {
  pg stop "$data" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
if ! admin_url="$(pg start "$data")"; then
  fail "PostgreSQL starts on 127.0.0.1"
  finish
fi
ok "PostgreSQL 17 with pgvector on 127.0.0.1 ($(pg psql "$data" -d postgres -Atc 'SHOW server_version' 2>/dev/null))"
port="$(sed -E 's|.*:([0-9]+)/.*|\1|' <<<"$admin_url")"
sql() { pg psql "$data" -v ON_ERROR_STOP=1 -Atq "$@"; }

# --- roles, as docs/team.md says ----------------------------------------------------------------
writer_pw="ci-$RANDOM$RANDOM"
reader_pw="dev-$RANDOM$RANDOM"
outsider_pw="out-$RANDOM$RANDOM"
secrets=("$writer_pw" "$reader_pw" "$outsider_pw" "${admin_url#*://postgres:}")
secrets[3]="${secrets[3]%%@*}"
sql -d postgres -c "CREATE DATABASE code" -c "CREATE DATABASE elsewhere" \
  -c "CREATE ROLE raggrep_ci LOGIN PASSWORD '$writer_pw'" \
  -c "CREATE ROLE raggrep_dev LOGIN PASSWORD '$reader_pw'" \
  -c "CREATE ROLE outsider LOGIN PASSWORD '$outsider_pw'" >/dev/null
detail="$(sql -d code -v writer=raggrep_ci -v reader=raggrep_dev -f scripts/team_roles.sql 2>&1)"
check "scripts/team_roles.sql sets up a writer and a reader role" test $? -eq 0
writer_url="postgres://raggrep_ci@127.0.0.1:$port/code?sslmode=disable"
reader_url="postgres://raggrep_dev@127.0.0.1:$port/code?sslmode=disable"
as_writer() { PGPASSWORD="$writer_pw" "$bin" "$@"; }
as_reader() { PGPASSWORD="$reader_pw" "$bin" "$@"; }

# --- three repositories -----------------------------------------------------------------------
export RAGGREP_LOG=warn GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.invalid GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.invalid
make_repo() { # DIR REMOTE BRANCH
  mkdir -p "$1"
  git -C "$1" init -q -b "$3"
  git -C "$1" remote add origin "$2"
  git -C "$1" add -A
  git -C "$1" commit -qm init
}
cp -r tests/fixtures/polyglot "$work/poly-main"
make_repo "$work/poly-main" "https://ci:ghp_secrettoken@github.com/acme/polyglot.git" main
cp -r "$work/poly-main" "$work/poly-feature"
git -C "$work/poly-feature" checkout -q -b feature
cat >>"$work/poly-feature/src/auth.py" <<'EOF'


def revoke_token(store, token):
    """Forget an API token so it no longer authenticates anyone."""
    store._tokens.pop(token, None)
EOF
git -C "$work/poly-feature" commit -qam "revoke tokens"
ledger_repo "$work/ledger"

outputs="$work/outputs"
mkdir -p "$outputs"
push_json() { # NAME DIR [args…]: push as the writer, JSON in $outputs/NAME.json
  local name="$1" dir="$2"
  shift 2
  as_writer push "$dir" --to "$writer_url" --json "$@" >"$outputs/$name.json" 2>"$outputs/$name.err"
}

push_json a "$work/poly-main"
detail="$(cat "$outputs/a.err" "$outputs/a.json")"
check "first push of github.com/acme/polyglot@main sends every file and chunk" \
  json "$outputs/a.json" 'd["repo"] == "github.com/acme/polyglot@main" and d["changed_files"] == d["files"] > 0 and d["chunks_sent"] > 0 and d["chunks_present"] == 0'
push_json b "$work/poly-feature"
detail="$(cat "$outputs/b.err" "$outputs/b.json")"
sent="$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["chunks_sent"], "sent,", d["chunks_present"], "already there")' "$outputs/b.json" 2>/dev/null)"
check "a second branch stores only its new chunks, identical ones are stored once ($sent)" \
  json "$outputs/b.json" 'd["repo"] == "github.com/acme/polyglot@feature" and 0 < d["chunks_sent"] < d["chunks_present"]'
push_json c "$work/ledger"
detail="$(cat "$outputs/c.err" "$outputs/c.json")"
check "a third repository (scp-style remote) is named gitlab.example/finance/ledger@trunk" \
  json "$outputs/c.json" 'd["repo"] == "gitlab.example/finance/ledger@trunk" and d["files"] == 1'
detail="$(sql -d code -c "SELECT name, remote FROM raggrep.repo ORDER BY name")"
check "the database holds three repositories and no credential from a remote URL" \
  bash -c "[[ \$(wc -l <<<'$detail') -eq 3 ]] && ! grep -q secrettoken <<<'$detail'"

# --- search ----------------------------------------------------------------------------------
query() { # NAME args…: query as the reader
  local name="$1"
  shift
  as_reader query --from "$reader_url" --json "$@" >"$outputs/$name.json" 2>"$outputs/$name.err"
}
query q1 "check whether an API token is still valid"
detail="$(cat "$outputs/q1.err" "$outputs/q1.json")"
check "the reader finds validate_token first, with its repository" \
  json "$outputs/q1.json" 'd["results"][0]["path"] == "src/auth.py" and d["results"][0]["symbol"] == "validate_token" and d["results"][0]["repo"].startswith("github.com/acme/polyglot@")'
check "results come from both branches of the repository" \
  json "$outputs/q1.json" '{r["repo"] for r in d["results"] if r["symbol"] == "validate_token"} == {"github.com/acme/polyglot@main", "github.com/acme/polyglot@feature"}'
(cd "$work/poly-main" && "$bin" query --json "check whether an API token is still valid" >"$outputs/local.json" 2>/dev/null)
detail="$(head -c 600 "$outputs/local.json")"
check "a team result has the local result's shape, plus repo and the chunk's whole text" python3 - "$outputs/local.json" "$outputs/q1.json" <<'PY'
import json, sys
local, team = (json.load(open(p)) for p in sys.argv[1:])
# The confidence is calibrated for the local ranking only; the team index claims none. `root`
# names the local index that answered; the team index is no local root.
assert "confidence" in local and "no_confident_match" in local and "root" in local, local.keys()
assert set(team) == set(local) - {"confidence", "no_confident_match", "root"}, (set(team), set(local))
hit = team["results"][0]
assert set(hit) == set(local["results"][0]) | {"repo", "text"}, (hit.keys(), local["results"][0].keys())
lines = hit["end_line"] - hit["start_line"] + 1
assert hit["text"].startswith(hit["snippet"].rstrip("\n")) and len(hit["text"].rstrip("\n").split("\n")) == lines, hit
PY
query q2 "forget an API token" --repo 'github.com/acme/polyglot@feature'
detail="$(cat "$outputs/q2.err" "$outputs/q2.json")"
check "--repo keeps one repository; the feature branch's revoke_token comes first" \
  json "$outputs/q2.json" 'd["results"] and all(r["repo"] == "github.com/acme/polyglot@feature" for r in d["results"]) and d["results"][0]["symbol"] == "revoke_token"'
query q3 "sum the amounts of an account" --repo '*/finance/*'
detail="$(cat "$outputs/q3.err" "$outputs/q3.json")"
check "--repo with a glob: the ledger's Balance" \
  json "$outputs/q3.json" 'd["results"] and all(r["repo"] == "gitlab.example/finance/ledger@trunk" for r in d["results"]) and d["results"][0]["symbol"] == "Balance"'
query q4 "validate_token" --mode lexical -k 3
detail="$(cat "$outputs/q4.err" "$outputs/q4.json")"
check "lexical mode (full-text search over code tokens) finds validate_token" \
  json "$outputs/q4.json" 'any(r["symbol"] == "validate_token" for r in d["results"])'
# The next three ask what only Balance answers: "sum the amounts of an account" alone puts the
# polyglot's sumAll within a hair of it (locally 0.388 against 0.375 with both branches indexed;
# the team index's full-text ranks put sumAll first at k=1 since the code model's chunk-pool turn).
as_reader query --from "$reader_url" "sum the amounts of every posting of an account" -k 1 >"$outputs/q5.txt" 2>&1
detail="$(cat "$outputs/q5.txt")"
check "text output names the repository, location and symbol" grep -q '^gitlab.example/finance/ledger@trunk  src/ledger.go:[0-9]*-[0-9]*  [0-9.]*  Balance$' "$outputs/q5.txt"
RAGGREP_TEAM_URL="$reader_url" PGPASSWORD="$reader_pw" "$bin" query --team --json -k 1 "sum the amounts of every posting of an account" >"$outputs/q6.json" 2>"$outputs/q6.err"
detail="$(cat "$outputs/q6.err")"
check "--team searches the team index RAGGREP_TEAM_URL names" json "$outputs/q6.json" 'd["results"][0]["symbol"] == "Balance"'
mkdir -p "$work/xdg/raggrep"
printf '[team]\nurl = "%s"\n' "$reader_url" >"$work/xdg/raggrep/config.toml"
(cd "$work/ledger" && env -u RAGGREP_TEAM_URL XDG_CONFIG_HOME="$work/xdg" PGPASSWORD="$reader_pw" "$bin" query --team --json -k 1 "sum the amounts of every posting of an account" >"$outputs/q8.json" 2>"$outputs/q8.err")
detail="$(cat "$outputs/q8.err")"
check "--team takes [team] url from ~/.config/raggrep/config.toml" json "$outputs/q8.json" 'd["results"][0]["symbol"] == "Balance"'
printf '\n[team]\nurl = "%s"\n' "$writer_url" >>"$work/ledger/.raggrep/config.toml"
env -u RAGGREP_TEAM_URL PGPASSWORD="$writer_pw" "$bin" push "$work/ledger" --json >"$outputs/c2.json" 2>"$outputs/c2.err"
detail="$(cat "$outputs/c2.err" "$outputs/c2.json")"
check "push takes [team] url from the workspace's .raggrep/config.toml" \
  json "$outputs/c2.json" 'd["repo"] == "gitlab.example/finance/ledger@trunk" and d["chunks_sent"] == 0 and d["changed_files"] == 0'

# --- the language server with the team index as an extra source ---------------------------------
# The checkout of github.com/acme/polyglot@main, with the `team` setting: local hits as always,
# plus the team's hits of other repositories (every branch of polyglot left out: it is local).
lsp_search() { # NAME SETTINGS QUERY…: one answer per query, as JSON lines in $outputs/NAME.jsonl
  local name="$1" settings="$2"
  shift 2
  PGPASSWORD="$reader_pw" python3 tests/support/lsp_search.py "$bin" "$work/poly-main" "$settings" "$outputs/$name.err" "$@" >"$outputs/$name.jsonl"
}
answer() { sed -n "${2}p" "$outputs/$1.jsonl" >"$outputs/$1.$2.json"; echo "$outputs/$1.$2.json"; }
lsp_search l1 "{\"team\": \"$reader_url\"}" "sum the amounts of every posting of an account" "check whether an API token is still valid"
detail="$(tail -n 5 "$outputs/l1.err"; head -c 1500 "$outputs/l1.jsonl")"
check "raggrep.search with the team setting: local hits, then the team's with their repository and no uri" \
  json "$(answer l1 1)" 'd["results"] and all("uri" in h for h in d["results"]) and d["team"]["results"][0]["symbol"] == "Balance" and d["team"]["results"][0]["repo"] == "gitlab.example/finance/ledger@trunk" and all("uri" not in h and h["snippet"] for h in d["team"]["results"]) and "error" not in d["team"]'
check "the team section leaves out every branch of the checkout's own repository" \
  json "$(answer l1 2)" 'd["results"] and d["team"]["results"] and not any(h["repo"].startswith("github.com/acme/polyglot@") for h in d["team"]["results"])'
RAGGREP_TEAM_URL="$reader_url" lsp_search l2 '{"team": true}' "sum the amounts of an account"
detail="$(tail -n 5 "$outputs/l2.err"; cat "$outputs/l2.jsonl")"
check "team = true takes the team index RAGGREP_TEAM_URL names" \
  json "$(answer l2 1)" 'd["team"]["results"][0]["symbol"] == "Balance" and d["team"]["source"].startswith("postgres://raggrep_dev@127.0.0.1")'
# A team index that is down: the local search answers as always, the section says why, and the
# next search does not wait for the database again.
down_url="postgres://raggrep_dev@127.0.0.1:9/code?sslmode=disable"
lsp_search l3 "{\"team\": \"$down_url\"}" "sum the amounts of an account" "check whether an API token is still valid"
detail="$(tail -n 5 "$outputs/l3.err"; cat "$outputs/l3.jsonl")"
check "a team index that is down: local results, and the team section's error names it" \
  json "$(answer l3 1)" 'd["results"] and d["team"]["results"] == [] and "cannot connect" in d["team"]["error"] and "127.0.0.1:9" in d["team"]["error"]'
check "the next search answers at once with the same error, retrying later" \
  json "$(answer l3 2)" 'd["results"] and "trying again in" in d["team"]["error"] and d["team"]["took_ms"] < 100'
(unset RAGGREP_TEAM_URL; XDG_CONFIG_HOME="$work/empty-xdg" lsp_search l4 '{"team": true}' "sum the amounts of an account")
detail="$(tail -n 5 "$outputs/l4.err"; cat "$outputs/l4.jsonl")"
check "team = true with nothing configured: local results, and an error saying how to configure it" \
  json "$(answer l4 1)" 'd["results"] and "RAGGREP_TEAM_URL" in d["team"]["error"]'
# The search's `lang` and `path` filters apply to the team's hits too.
lsp_search l6 "{\"team\": \"$reader_url\"}" '{"query": "sum the amounts of an account", "k": 5, "lang": "go"}' \
  '{"query": "sum the amounts of an account", "k": 5, "lang": "python"}' '{"query": "sum the amounts of an account", "k": 5, "path": "docs/**"}'
detail="$(tail -n 5 "$outputs/l6.err"; cat "$outputs/l6.jsonl")"
check "team hits obey lang: go keeps the ledger's Balance" json "$(answer l6 1)" 'd["team"]["results"][0]["symbol"] == "Balance"'
check "team hits obey lang: python leaves out the ledger's Go" json "$(answer l6 2)" 'all(h["language"] == "python" for h in d["team"]["results"]) and all(h["language"] == "python" for h in d["results"])'
check "team hits obey path" json "$(answer l6 3)" 'd["results"] and all(h["path"].startswith("docs/") for h in d["team"]["results"] + d["results"])'
lsp_search l5 '{}' "sum the amounts of an account"
detail="$(cat "$outputs/l5.jsonl")"
check "without the setting there is no team section" json "$(answer l5 1)" 'd["results"] and "team" not in d'

# --- only the change travels -------------------------------------------------------------------
push_json a2 "$work/poly-main"
detail="$(cat "$outputs/a2.json")"
check "pushing again without changes sends nothing" json "$outputs/a2.json" 'd["changed_files"] == 0 and d["removed_files"] == 0 and d["chunks_sent"] == 0'
cat >>"$work/poly-main/src/checksum.rs" <<'EOF'

/// Rotates a ledger of hash chains by a fixed stride.
pub fn rotate_chain(chain: &mut Vec<u64>, stride: usize) {
    chain.rotate_left(stride % chain.len().max(1));
}
EOF
git -C "$work/poly-main" rm -q lib/Cache.java
git -C "$work/poly-main" commit -qam "edit one file, remove one"
push_json a3 "$work/poly-main"
detail="$(cat "$outputs/a3.err" "$outputs/a3.json")"
check "after editing one file and removing one: 1 changed, 1 removed, a few chunks sent" \
  json "$outputs/a3.json" 'd["changed_files"] == 1 and d["removed_files"] == 1 and 0 < d["chunks_sent"] <= 3'
query q7 "rotate hash chains by a stride" --repo 'github.com/acme/polyglot@main' -k 3
detail="$(cat "$outputs/q7.json")"
check "the new function is found; the removed file is gone" \
  json "$outputs/q7.json" 'd["results"][0]["symbol"] == "rotate_chain" and not any(r["path"] == "lib/Cache.java" for r in d["results"])'
detail="$(sql -d code -c "SELECT count(*) FROM raggrep.entry e JOIN raggrep.repo r ON r.id = e.repo_id WHERE r.name = 'github.com/acme/polyglot@main' AND e.path = 'lib/Cache.java'")"
check "no row of the removed file is left" test "$detail" = 0

# --- interrupted pushes ------------------------------------------------------------------------
# A bigger repository: part of this project's own Rust sources (indexed first, so the push is the
# upload). Pushes are stopped (SIGSTOP) right after their first committed batch, so what happens
# next does not depend on timing.
big="$work/big"
mkdir -p "$big/src"
cp server/src/index/*.rs server/src/search/*.rs "$big/src/"
make_repo "$big" "https://github.com/acme/big.git" main
"$bin" index "$big" >/dev/null 2>&1
entries_of() { sql -d code -c "SELECT count(*) FROM raggrep.entry e JOIN raggrep.repo r ON r.id = e.repo_id WHERE r.name = '$1'"; }
# A reader polling the repository's row count the whole time: it must only ever see 0 (not yet
# published) or the complete count.
poll() { # NAME OUTFILE: until $work/stop-poll exists
  while [[ ! -e "$work/stop-poll" ]]; do
    entries_of "$1" >>"$2" 2>/dev/null
  done
}
rm -f "$work/stop-poll"
poll "github.com/acme/big@main" "$work/poll1" &
poller=$!
first_batch() { # PID ERRFILE: wait for the first committed batch, then stop the pusher there
  for _ in $(seq 1 6000); do
    grep -q "chunks uploaded" "$2" 2>/dev/null && break
    kill -0 "$1" 2>/dev/null || break
    sleep 0.01
  done
  kill -STOP "$1" 2>/dev/null
}
# Two chunks per batch and hundreds of chunks to send: the push is still uploading when it is
# stopped, a few batches in (checked: the tests below fail if it had already published).
PGPASSWORD="$writer_pw" "$bin" push "$big" --to "$writer_url" --batch 2 >"$outputs/k1.out" 2>"$outputs/k1.err" &
pusher=$!
first_batch "$pusher" "$outputs/k1.err"
kill -9 "$pusher" 2>/dev/null
wait "$pusher" 2>/dev/null
detail="$(cat "$outputs/k1.err"; entries_of github.com/acme/big@main)"
killed_rows="$(entries_of github.com/acme/big@main)"
detail="rows: $killed_rows; $(cat "$outputs/k1.err")"
check "a push killed mid-upload (after its first batch) published nothing of its repository" \
  bash -c "grep -q 'chunks uploaded' '$outputs/k1.err' && [[ '$killed_rows' == 0 ]]"
push_json k2 "$big"
local_chunks="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["chunks"])' "$outputs/k2.json" 2>/dev/null)"
detail="$(cat "$outputs/k2.err" "$outputs/k2.json")"
check "pushing again resumes: chunks committed before the kill are not sent again" \
  json "$outputs/k2.json" 'd["chunks_present"] > 0 and d["changed_files"] == d["files"]'
check "after the resumed push the repository has every chunk exactly once" \
  test "$(entries_of github.com/acme/big@main)" = "$local_chunks"
touch "$work/stop-poll"
wait "$poller" 2>/dev/null
detail="$(sort -n "$work/poll1" | uniq -c | tr '\n' ' ')"
check "a reader polling throughout saw 0, then all $local_chunks rows, never a part ($(wc -l <"$work/poll1") polls)" \
  bash -c "grep -qx 0 '$work/poll1' && grep -qx '$local_chunks' '$work/poll1' && ! grep -vxE '0|$local_chunks' '$work/poll1'"

# The database killed mid-push: an edit that changes nearly every chunk, so there is a lot to send.
sed -i 's/\bfn /fn  /' "$big"/src/*.rs
git -C "$big" commit -qam touch
"$bin" index "$big" >/dev/null 2>&1
rm -f "$work/stop-poll"
PGPASSWORD="$writer_pw" "$bin" push "$big" --to "$writer_url" --batch 2 >"$outputs/k3.out" 2>"$outputs/k3.err" &
pusher=$!
first_batch "$pusher" "$outputs/k3.err"
pg kill "$data" >/dev/null 2>&1
kill -CONT "$pusher" 2>/dev/null
wait "$pusher"
rc=$?
detail="rc=$rc $(cat "$outputs/k3.err")"
check "with the database killed mid-push, push fails with one line naming the team index" \
  bash -c "[[ $rc -ne 0 ]] && tail -n 1 '$outputs/k3.err' | grep -q 'team index at postgres://raggrep_ci@127.0.0.1:$port/code'"
pg restart "$data" >/dev/null
detail="$(entries_of github.com/acme/big@main)"
check "after the crash the repository is still complete (the old state)" test "$detail" = "$local_chunks"
push_json k4 "$big"
detail="$(cat "$outputs/k4.err" "$outputs/k4.json")"
check "pushing again after the restart completes" json "$outputs/k4.json" 'd["changed_files"] > 0'
dups="$(sql -d code -c "SELECT count(*) FROM (SELECT repo_id, path, start_line, end_line, chunk_key FROM raggrep.entry GROUP BY 1, 2, 3, 4, 5 HAVING count(*) > 1) d")"
detail="$dups duplicated rows; $(entries_of github.com/acme/big@main) rows"
check "nothing duplicated, nothing lost" bash -c "[[ $dups == 0 && \$(python3 -c 'import json; print(json.load(open(\"$outputs/k4.json\"))[\"chunks\"])') == $(entries_of github.com/acme/big@main) ]]"

# --- naming the repository by hand ------------------------------------------------------------------
git -C "$work/ledger" checkout -q --detach
as_writer push "$work/ledger" --to "$writer_url" --remote github.com/acme/ledger-mirror --branch release \
  --index-dir "$work/ledger-index" --json >"$outputs/n1.json" 2>"$outputs/n1.err"
detail="$(cat "$outputs/n1.err" "$outputs/n1.json")"
check "--remote and --branch name the repository (a detached HEAD, an index kept in --index-dir)" \
  bash -c "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d[\"repo\"] != \"github.com/acme/ledger-mirror@release\")' '$outputs/n1.json' && [[ -e '$work/ledger-index/CURRENT' ]]"

# --- one clear line for each mistake -------------------------------------------------------------
one_line() { # NAME EXPECTED-REGEX command…
  local name="$1" want="$2"
  shift 2
  "$@" >"$work/err.out" 2>"$work/err.txt"
  local rc=$?
  detail="rc=$rc $(cat "$work/err.txt" "$work/err.out")"
  check "$name" bash -c "[[ $rc -ne 0 ]] && [[ \$(wc -l <'$work/err.txt') -eq 1 ]] && grep -qE '$want' '$work/err.txt'"
}
one_line "a detached HEAD without --branch" "HEAD is not on a branch .*--branch NAME" as_writer push "$work/ledger" --to "$writer_url"
git -C "$work/ledger" checkout -q trunk
mkdir -p "$work/no-remote"
cp "$work/ledger/src/ledger.go" "$work/no-remote/"
git -C "$work/no-remote" init -q -b main
one_line "a tree without a remote" "has no git remote named origin: name the repository with --remote NAME" \
  as_writer push "$work/no-remote" --to "$writer_url"
one_line "a bad URL" "invalid team index URL postgres://raggrep_ci:\*\*\*@" \
  "$bin" query --from "postgres://raggrep_ci:$writer_pw@127.0.0.1:notaport/code" "x"
one_line "a wrong password" "password authentication failed" env PGPASSWORD=wrong "$bin" query --from "$reader_url" "x"
one_line "a server that is down" "cannot connect to the team index at postgres://raggrep_dev@127.0.0.1:1/code" \
  env PGPASSWORD="$reader_pw" "$bin" query --from "postgres://raggrep_dev@127.0.0.1:1/code?sslmode=disable" "x"
one_line "a role that may not enable pgvector" "ask an administrator to run CREATE EXTENSION vector" \
  env PGPASSWORD="$outsider_pw" "$bin" push "$work/ledger" --to "postgres://outsider@127.0.0.1:$port/elsewhere?sslmode=disable"
one_line "the reader cannot push" "permission denied" as_reader push "$work/ledger" --to "$reader_url"
one_line "a database without an index yet" "no raggrep index in this database yet" \
  env PGPASSWORD="$outsider_pw" "$bin" query --from "postgres://outsider@127.0.0.1:$port/elsewhere?sslmode=disable" "x"
one_line "no URL anywhere" "no team index configured" env -u RAGGREP_TEAM_URL XDG_CONFIG_HOME="$work/none" "$bin" query --team "x"

leaks=""
for secret in "${secrets[@]}"; do
  [[ -n "$secret" ]] && grep -rlF -- "$secret" "$outputs" "$work/err.txt" "$work/err.out" >/dev/null 2>&1 && leaks="$leaks $secret"
done
detail="found:$leaks"
check "no password appears in any output of the test" test -z "$leaks"
finish
