#!/usr/bin/env bash
# Self-test of tests/pg/postgres.sh: installs (or finds the cached install), starts a server in a
# temporary directory, and checks what the team backend's tests rely on: PostgreSQL 17, pgvector
# 0.8.0 with an HNSW index the planner uses, password auth (a wrong password is refused), 127.0.0.1
# only, a crash (`kill`) and `restart` on the same port with committed data intact, `stop`, and a
# later `start` on the same port. Prints the timings (install, first start with initdb, start of an
# existing cluster, restart after a crash). Removes the temporary directory. The last line is
# "N passed, M failed"; the exit status is non-zero if anything failed.
#
#   bash tests/pg/selftest.sh
#
# Environment: as for postgres.sh (RAGGREP_HOME, RAGGREP_PG_TIMEOUT, RAGGREP_PG_USER); KEEP_TMP=1
# keeps the temporary directory (its path is printed).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pg=(bash "$here/postgres.sh")

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
# expect ACTUAL EXPECTED WHAT
expect() {
  if [ "$1" = "$2" ]; then ok "$3"; else not_ok "$3: got '$1', expected '$2'"; fi
}
# Seconds since $1 (a date +%s.%N), to the millisecond.
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }

tmp="$(mktemp -d "${TMPDIR:-/tmp}/raggrep-pg-selftest.XXXXXX")"
data="$tmp/data" # does not exist yet: start creates it
# shellcheck disable=SC2329 # run by the EXIT trap
cleanup() {
  "${pg[@]}" stop "$data" >/dev/null 2>&1 || "${pg[@]}" kill "$data" >/dev/null 2>&1
  if [ "${KEEP_TMP:-0}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

sql() { "${pg[@]}" psql "$data" -qAt -v ON_ERROR_STOP=1 "$@"; }

# --- install ------------------------------------------------------------------------------------

tools_dir="${RAGGREP_HOME:-$HOME/.cache/raggrep}/tools/postgresql-17-trixie"
kind=warm
[ -f "$tools_dir/root/.complete" ] || kind=cold
t0="$(date +%s.%N)"
if dir="$("${pg[@]}" install)"; then
  t_install="$(since "$t0")"
  ok "install ($kind, ${t_install}s): $dir"
else
  not_ok "install failed"
  finish
fi
t0="$(date +%s.%N)"
"${pg[@]}" install >/dev/null && ok "install again (cached, no network): $(since "$t0")s"
echo "# packages: $(wc -l <"$dir/root/PACKAGES"), cached root $(du -sh "$dir" | cut -f1)"
grep -E '^postgresql-17(-pgvector)? ' "$dir/root/PACKAGES" | sed 's/^/# /'

# --- start (initdb) -----------------------------------------------------------------------------

t0="$(date +%s.%N)"
if url="$("${pg[@]}" start "$data")"; then
  t_first="$(since "$t0")"
  ok "start with initdb: ${t_first}s"
else
  not_ok "start failed"
  finish
fi
if [[ "$url" =~ ^postgres://postgres:([0-9a-f]{32})@127\.0\.0\.1:([0-9]+)/postgres$ ]]; then
  password="${BASH_REMATCH[1]}" port="${BASH_REMATCH[2]}"
  ok "start printed one URL: postgres://postgres:<password>@127.0.0.1:$port/postgres"
else
  not_ok "start printed: $url"
  finish
fi
expect "$("${pg[@]}" url "$data" 2>&1)" "$url" "url prints the same URL"
expect "$(cat "$data/raggrep-test-password" 2>&1)" "$password" "the password is kept in DATADIR/raggrep-test-password"
if [ "$(id -u)" = 0 ]; then
  user="${RAGGREP_PG_USER:-raggrep-pg}"
  expect "$(stat -c '%U %a' "$data")" "$user 700" "as root: DATADIR belongs to $user, mode 700"
  expect "$(stat -c %U "/proc/$(head -n 1 "$data/postmaster.pid")")" "$user" "as root: the server runs as $user"
fi

# --- the server -----------------------------------------------------------------------------

version="$(sql -c 'SELECT version()')"
expect "$(grep -o '^PostgreSQL 17\.' <<<"$version")" "PostgreSQL 17." "SELECT version(): ${version%% on *}"

settings="$(sql -c "SELECT current_setting('listen_addresses'), current_setting('jit'), current_setting('fsync'), current_setting('server_encoding')")"
expect "$settings" "127.0.0.1|off|on|UTF8" "listen_addresses 127.0.0.1, jit off, fsync on, UTF8"

# The URL itself, as a client uses it.
expect "$(sql -d "$url" -c 'SELECT 1' 2>&1)" 1 "a client connects with the URL"

if wrong="$("${pg[@]}" psql "$data" -qAt -d "host=127.0.0.1 port=$port user=postgres dbname=postgres password=wrong" -c 'SELECT 1' 2>&1)"; then
  not_ok "a wrong password was accepted"
elif grep -q 'password authentication failed for user "postgres"' <<<"$wrong"; then
  ok "a wrong password is refused (password authentication failed)"
else
  not_ok "a wrong password: $wrong"
fi

if sql -c 'CREATE EXTENSION vector' >/dev/null; then ok "CREATE EXTENSION vector"; else not_ok "CREATE EXTENSION vector"; fi
extversion="$(sql -c "SELECT extversion FROM pg_extension WHERE extname = 'vector'")"
expect "$extversion" 0.8.0 "pgvector extversion is 0.8.0"

expect "$(sql 2>&1 <<'EOF'
CREATE TABLE items (id integer PRIMARY KEY, embedding vector(3) NOT NULL);
CREATE INDEX items_embedding_hnsw ON items USING hnsw (embedding vector_cosine_ops);
INSERT INTO items VALUES (1, '[1,0,0]'), (2, '[0.9,0.1,0]'), (3, '[0,1,0]'), (4, '[0,0,1]'), (5, '[0.7,0.7,0]'), (6, '[-1,0,0]');
EOF
)" "" "table with vector(3), HNSW index (vector_cosine_ops), 6 rows"
knn="SELECT id FROM items ORDER BY embedding <=> '[1,0.05,0]' LIMIT 3"
plan="$(sql -c 'SET enable_seqscan = off' -c "EXPLAIN $knn")"
index="$(sed -n 's/.*Index Scan using \([^ ]*\) on items.*/\1/p' <<<"$plan" | head -n 1)"
am="$(sql -c "SELECT am.amname FROM pg_class c JOIN pg_am am ON am.oid = c.relam WHERE c.relname = '$index'" 2>/dev/null)"
if [ "$index" = items_embedding_hnsw ] && [ "$am" = hnsw ]; then
  ok "EXPLAIN of ORDER BY embedding <=> ... LIMIT 3 uses the hnsw index ($index)"
else
  not_ok "EXPLAIN does not use the hnsw index:"
  printf '%s\n' "$plan" | sed 's/^/    /'
fi
nearest="$(sql -c 'SET enable_seqscan = off' -c "$knn" | paste -sd,)"
expect "$nearest" 1,2,5 "nearest by cosine distance through the index"

# --- crash and restart --------------------------------------------------------------------------

sql -c "INSERT INTO items VALUES (7, '[1,0.04,0]')" >/dev/null
pid="$(head -n 1 "$data/postmaster.pid")"
if "${pg[@]}" kill "$data" && [ ! -e "/proc/$pid" ]; then
  ok "kill: postmaster $pid gone (SIGKILL)"
else
  not_ok "kill: postmaster $pid still there"
fi
if sql -c 'SELECT 1' >/dev/null 2>&1; then not_ok "the server still answers after kill"; else ok "nothing answers on port $port after kill"; fi
t0="$(date +%s.%N)"
if url2="$("${pg[@]}" restart "$data")"; then
  t_restart="$(since "$t0")"
  expect "$url2" "$url" "restart after the crash: same port and URL (${t_restart}s, with crash recovery)"
else
  not_ok "restart after kill failed"
fi
expect "$(grep -c 'database system was interrupted; last known up at' "$data/log/postgres.log")" 1 "the log shows one crash recovery"
rows="$(sql -c 'SELECT count(*) FROM items')"
expect "$rows" 7 "committed data survived the crash"
nearest="$(sql -c 'SET enable_seqscan = off' -c "$knn" | paste -sd,)"
expect "$nearest" 7,1,2 "the hnsw index answers after recovery, the row inserted before the crash included"

# --- stop, start again --------------------------------------------------------------------------

if "${pg[@]}" stop "$data" && [ ! -e "$data/postmaster.pid" ] && ! sql -c 'SELECT 1' >/dev/null 2>&1; then
  ok "stop: fast shutdown, nothing answers"
else
  not_ok "stop: the server is still there"
fi
t0="$(date +%s.%N)"
if url3="$("${pg[@]}" start "$data")"; then
  t_warm="$(since "$t0")"
  expect "$url3" "$url" "start of the existing cluster: same URL (${t_warm}s)"
  expect "$(sql -c 'SELECT count(*) FROM items' 2>&1)" 7 "data kept across stop/start"
else
  not_ok "start after stop failed"
fi
if "${pg[@]}" stop "$data"; then ok "stop"; else not_ok "final stop"; fi

echo "# timings: install ${t_install}s ($kind), first start with initdb ${t_first}s, start ${t_warm:-?}s, restart after kill ${t_restart:-?}s"
finish
