#!/usr/bin/env bash
# The team index benchmark against a real PostgreSQL 17 + pgvector 0.8.0 on loopback, started
# here in a temporary data directory (tests/pg/postgres.sh) and stopped afterwards.
#
#   bash benches/team_backend.sh [--quick] [ROOT] [--synthetic N] [--rounds R]
#
# ROOT (default: the polyglot fixture, copied) is indexed first if it has no index. --quick: the
# fixture, 2,000 synthetic vectors, one round (the test command's sanity run; no number asserted).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$PWD"
bin="${RAGGREP_BIN:-$repo/target/debug/raggrep}"
root=""
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) extra+=(--synthetic 2000 --rounds 1) ;;
    --synthetic | --rounds) extra+=("$1" "$2"); shift ;;
    *) root="$1" ;;
  esac
  shift
done
work="$(mktemp -d)"
trap 'bash tests/pg/postgres.sh stop "$work/pgdata" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
if [[ -z $root ]]; then
  cp -r tests/fixtures/polyglot "$work/polyglot"
  root="$work/polyglot"
fi
[[ -d $root/.raggrep ]] || "$bin" index "$root" >/dev/null
bash tests/pg/postgres.sh install >/dev/null
url="$(bash tests/pg/postgres.sh start "$work/pgdata")"
bash tests/pg/postgres.sh psql "$work/pgdata" -d postgres -qc "CREATE EXTENSION IF NOT EXISTS vector" >/dev/null
# The password travels in PGPASSWORD, as the README asks of users, not on a command line.
export PGPASSWORD="$(sed -E 's|^postgres://[^:]*:([^@]*)@.*|\1|' <<<"$url")"
cargo bench --locked --bench team_backend -- --url "$(sed -E 's|^(postgres://[^:]*):[^@]*@|\1@|' <<<"$url")?sslmode=disable" "$root" "${extra[@]}"
