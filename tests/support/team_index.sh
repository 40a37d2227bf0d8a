# shellcheck shell=bash
# Sourced by the tests that need a team index with something in it (tests/pg/run.sh, the VS Code
# and Neovim tests): a second repository to push, and a PostgreSQL 17 + pgvector on 127.0.0.1
# (tests/pg/postgres.sh) holding it.

_team_index_repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# DIR becomes a git checkout of gitlab.example/finance/ledger@trunk (an scp-style remote) with
# one Go file: `Balance` ("sums the amounts of every posting of an account, in cents").
ledger_repo() { # DIR
  mkdir -p "$1/src"
  cat >"$1/src/ledger.go" <<'GO'
package ledger

// Balance sums the amounts of every posting of an account, in cents.
func Balance(postings []Posting, account string) int64 {
	var total int64
	for _, p := range postings {
		if p.Account == account {
			total += p.Cents
		}
	}
	return total
}

// Posting is one line of a journal entry.
type Posting struct {
	Account string
	Cents   int64
}
GO
  (
    export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.invalid GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.invalid
    cd "$1" && git init -q -b trunk && git remote add origin git@gitlab.example:finance/ledger.git \
      && git add -A && git commit -qm init
  )
}

# Starts PostgreSQL in DIR/pgdata, creates the database `code`, and pushes the ledger (in
# DIR/ledger) with BIN. Sets team_url (no password) and team_password; says why on stderr and
# fails when something is missing. Stop it with `team_index_stop DIR`.
team_index_start() { # DIR BIN
  local dir="$1" bin="$2" admin_url port pushed
  mkdir -p "$dir"
  team_index_pg install >/dev/null || { echo "tests/pg/postgres.sh install failed" >&2; return 1; }
  admin_url="$(team_index_pg start "$dir/pgdata")" || { echo "tests/pg/postgres.sh start failed" >&2; return 1; }
  team_password="${admin_url#postgres://postgres:}"
  team_password="${team_password%%@*}"
  port="$(sed -E 's|.*:([0-9]+)/.*|\1|' <<<"$admin_url")"
  team_index_pg psql "$dir/pgdata" -d postgres -qc "CREATE DATABASE code" >/dev/null || return 1
  team_url="postgres://postgres@127.0.0.1:$port/code?sslmode=disable"
  ledger_repo "$dir/ledger" || return 1
  pushed="$(RAGGREP_LOG=warn PGPASSWORD="$team_password" "$bin" push "$dir/ledger" --to "$team_url" --json)" || return 1
  grep -q '"repo": *"gitlab.example/finance/ledger@trunk"' <<<"$pushed" || { echo "push answered: $pushed" >&2; return 1; }
}

team_index_stop() { # DIR
  team_index_pg stop "$1/pgdata" >/dev/null 2>&1
}

team_index_pg() { bash "$_team_index_repo/tests/pg/postgres.sh" "$@"; }
