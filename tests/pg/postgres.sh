#!/usr/bin/env bash
# A real PostgreSQL 17 with pgvector 0.8.0 on loopback, for the team backend's tests and benchmarks
# (issue 15).
#
#   bash tests/pg/postgres.sh install          # fetch once, cached; prints the tool dir
#   bash tests/pg/postgres.sh start DATADIR    # initdb if DATADIR is new or empty, start, wait until
#                                              # it accepts connections; prints the URL:
#                                              #   postgres://postgres:<password>@127.0.0.1:<port>/postgres
#   bash tests/pg/postgres.sh url DATADIR      # print that URL again
#   bash tests/pg/postgres.sh psql DATADIR [ARGS...]   # trixie's psql, connected as postgres
#   bash tests/pg/postgres.sh stop DATADIR     # fast shutdown (waits)
#   bash tests/pg/postgres.sh kill DATADIR     # SIGKILL the postmaster and its children: a crash
#   bash tests/pg/postgres.sh restart DATADIR  # stop if running, start again on the SAME port
#
# Only the URL (start, url) and psql's own output go to stdout; progress and errors go to stderr.
# A failed start prints the tail of DATADIR/log/postgres.log. `start` on a running server prints
# its URL; `start` after `stop` reuses the recorded port if it is free (else picks another);
# `restart` fails with one line if another process took it. `kill` returns once the postmaster is
# reaped and no child is left, so that `restart` can follow at once (with crash recovery). `psql`
# runs as the caller over 127.0.0.1 with the password, the connection given as PG* environment
# defaults so that ARGS (-d DB or a URL, -U ROLE) override them; -X (no ~/.psqlrc).
#
# Where PostgreSQL comes from: Debian trixie's postgresql-17, postgresql-17-pgvector and
# postgresql-client-17, with the shared libraries they link (trixie's libc among them; this host may
# be older: bookworm has glibc 2.36, trixie's binaries need 2.38+). They are fetched with apt-get
# from the mirror this machine is already configured with (read from its apt sources at run time),
# through a private sources list, config, dpkg status and cache: the system's apt setup is not
# touched. apt's own solver picks the closure, with the packages that only serve Debian's
# packaging (postgresql-common's perl wrappers, debconf, locales, ssl-cert, tzdata) and libllvm
# (JIT only; JIT is turned off and llvmjit.so removed) marked as already installed in the private
# status file, so neither they nor what they pull in are fetched. Every ELF file in the root is then
# checked with trixie's loader (`ld.so --list`): each library it needs must resolve inside the root.
#
# PostgreSQL's programs run each other by absolute path found from their own location (initdb and
# pg_ctl run postgres), so a launcher in front of the first one is not enough: every trixie
# executable gets trixie's loader as its ELF interpreter and the root's library dir as its DT_RPATH
# (patchelf 0.18, trixie's, itself run through trixie's loader). DT_RPATH, not RUNPATH, because it
# also covers the libraries those load and the modules postgres dlopens (plpgsql.so, vector.so).
# Nothing is set in the environment (no LD_LIBRARY_PATH), so what the server starts (archive
# commands, a shell) runs on the host's own libraries. The binaries find their share and lib dirs
# relative to their own path, as a relocated PostgreSQL does (install checks `pg_config`).
#
# The installed root is cached under $RAGGREP_HOME/tools/postgresql-17-trixie (default RAGGREP_HOME
# ~/.cache/raggrep), with root/.complete written last (a half install is redone) and root/PACKAGES
# listing every package and version; later runs use no network. Install fails with one line if
# trixie no longer has PostgreSQL 17.x or pgvector 0.8.0.
#
# The server: initdb with superuser `postgres` and a random password kept in
# DATADIR/raggrep-test-password, UTF8 with the builtin C.UTF-8 locale (no host locale needed),
# SCRAM password auth for every connection (the socket too; no trust anywhere), listening only on
# 127.0.0.1 on a free port outside the ephemeral range (recorded in DATADIR/raggrep-test.conf,
# included from postgresql.conf), its unix socket in DATADIR, JIT off, fsync on (initdb itself runs
# with --no-sync: a throwaway cluster), timezone UTC (Debian's build reads the host's
# /usr/share/zoneinfo; GMT, built in, where that is missing), logs in DATADIR/log. PostgreSQL refuses to run as root: as
# root the server runs as the system user raggrep-pg (created with useradd if missing, via setpriv),
# which owns DATADIR (mode 700); if a directory above DATADIR or the tool root is closed to it
# (/root is 0700), it is given search permission (x) there with an ACL, naming the directory on
# stderr. Not as root, the server runs as the current user.
#
# Environment: RAGGREP_HOME (cache root), RAGGREP_PG_TIMEOUT (seconds start and stop may wait,
# default 60), RAGGREP_PG_USER (the server's user when run as root, default raggrep-pg).
set -euo pipefail

PG_SUITE=trixie
PG_MAJOR=17
PGVECTOR_VERSION=0.8.0
# What is asked for; apt adds the libraries. patchelf and acl (setfacl) are tools for the install
# and for running as root.
ROOT_PACKAGES=("postgresql-$PG_MAJOR" "postgresql-$PG_MAJOR-pgvector" "postgresql-client-$PG_MAJOR" patchelf acl)
# Marked installed, never fetched: Debian's cluster wrappers and maintainer-script helpers.
NOT_NEEDED=(postgresql-common postgresql-client-common debconf locales locales-all ssl-cert tzdata sensible-utils)
LAYOUT_REV=1 # bump when the extraction, pruning or patching changes: forces a reinstall

RAGGREP_HOME="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
TOOLS="$RAGGREP_HOME/tools"
DIR="$TOOLS/postgresql-$PG_MAJOR-$PG_SUITE"
ROOT="$DIR/root"
LIBDIR="$ROOT/usr/lib/x86_64-linux-gnu"
LOADER="$LIBDIR/ld-linux-x86-64.so.2"
BINDIR="$ROOT/usr/lib/postgresql/$PG_MAJOR/bin"
MARKER="$ROOT/.complete"
# The root's path is in it: the interpreter and RPATH written into the binaries are absolute.
STAMP="$PG_SUITE $PG_MAJOR pgvector $PGVECTOR_VERSION layout $LAYOUT_REV $ROOT"
TIMEOUT="${RAGGREP_PG_TIMEOUT:-60}"
SERVER_USER="${RAGGREP_PG_USER:-raggrep-pg}"
CONF_NAME=raggrep-test.conf
PASSWORD_NAME=raggrep-test-password

log() { echo "postgres.sh: $*" >&2; }
die() {
  log "error: $*"
  exit 1
}

is_installed() { [ "$(cat "$MARKER" 2>/dev/null)" = "$STAMP" ] && [ -x "$BINDIR/postgres" ]; }

# --- install ----------------------------------------------------------------------------------

# private_apt_root: a private apt root on this machine's Debian archive.
# shellcheck source=../support/debian_mirror.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/debian_mirror.sh"

# A private apt root for trixie under $DIR/apt, with its lists updated.
apt_setup() {
  local conf
  log "installing PostgreSQL $PG_MAJOR + pgvector $PGVECTOR_VERSION from Debian $PG_SUITE into $DIR"
  rm -rf "$DIR/apt"
  conf="$(private_apt_root "$DIR/apt" "$PG_SUITE")" || die "no private apt root for Debian $PG_SUITE"
  export APT_CONFIG="$conf"
  apt-get -q update >&2 || die "apt-get update ($PG_SUITE) failed"
}

# Marks the NOT_NEEDED packages (and the libllvm that postgresql-17 links for JIT) as installed in
# the private status file. The version is the archive's plus a suffix: a higher one, so apt never
# "upgrades" them; no dependency fields, so they pull in nothing.
fake_installed() {
  local llvm
  : >"$DIR/apt/status"
  llvm="$(apt-cache depends "postgresql-$PG_MAJOR" 2>/dev/null | grep -o 'libllvm[0-9]*' | sort -u)" || true
  # shellcheck disable=SC2086 # $llvm: zero or more names
  { apt-cache show --no-all-versions "${NOT_NEEDED[@]}" $llvm 2>/dev/null || true; } | awk '
    /^(Package|Architecture|Multi-Arch|Provides):/ { print }
    /^Version:/ { print $0 "+raggrep-not-installed" }
    /^$/ { print "Status: install ok installed\n" }' >"$DIR/apt/status.new"
  mv "$DIR/apt/status.new" "$DIR/apt/status"
}

# Every ELF file under DIR: prints their paths, NUL-separated.
elf_files() {
  local f magic
  while IFS= read -r -d '' f; do
    magic=""
    IFS= read -r -n 4 magic <"$f" 2>/dev/null || true
    [ "$magic" = $'\x7fELF' ] && printf '%s\0' "$f"
  done < <(find "$1" -type f -print0)
}

do_install() {
  is_installed && return 0
  [ "$(uname -m)" = x86_64 ] || die "this runs Debian's amd64 PostgreSQL; the machine is $(uname -m)"
  for tool in apt-get apt-cache apt-config dpkg-deb; do
    command -v "$tool" >/dev/null || die "$tool is needed to fetch PostgreSQL (a Debian-based machine)"
  done
  umask 022 # the server's user (when run as root) must be able to read the root
  mkdir -p "$TOOLS"
  # One install at a time; the lock fd is closed again before anything is started.
  if command -v flock >/dev/null; then
    exec 9>"$DIR.lock"
    flock 9
    if is_installed; then
      exec 9>&-
      return 0
    fi
  fi
  local t0=$SECONDS debs="$DIR/debs" stage="$DIR/root.partial" pkgs=() line name version deb f bad
  mkdir -p "$DIR"
  apt_setup
  fake_installed

  # apt's solver, simulated: "Inst NAME (VERSION ...)" for each package to fetch.
  local sim
  sim="$(apt-get -s -q install "${ROOT_PACKAGES[@]}" 2>&1)" || {
    printf '%s\n' "$sim" | tail -n 20 >&2
    die "apt cannot resolve ${ROOT_PACKAGES[*]} in $PG_SUITE"
  }
  while read -r name version; do
    pkgs+=("$name=$version")
    case "$name" in
      "postgresql-$PG_MAJOR") [[ "$version" == "$PG_MAJOR".* ]] ||
        die "$PG_SUITE's postgresql-$PG_MAJOR is $version, not $PG_MAJOR.x" ;;
      "postgresql-$PG_MAJOR-pgvector") [[ "$version" == "$PGVECTOR_VERSION"-* || "$version" == "$PGVECTOR_VERSION"+* ]] ||
        die "$PG_SUITE's postgresql-$PG_MAJOR-pgvector is $version, not $PGVECTOR_VERSION" ;;
    esac
  done < <(printf '%s\n' "$sim" | awk '$1 == "Inst" { for (i = 3; i <= NF; i++) if ($i ~ /^\(/) { print $2, substr($i, 2); break } }')
  [ "${#pkgs[@]}" -gt 0 ] || die "apt chose no packages to fetch (private status not empty?)"
  for name in "${ROOT_PACKAGES[@]}"; do
    grep -q "^$name=" <<<"$(printf '%s\n' "${pkgs[@]}")" || die "apt did not choose $name"
  done

  rm -rf "$debs"
  mkdir -p "$debs"
  (cd "$debs" && apt-get -q download "${pkgs[@]}" >&2) || die "apt-get download failed"

  rm -rf "$stage"
  mkdir -p "$stage"
  for deb in "$debs"/*.deb; do
    dpkg-deb -x "$deb" "$stage" || die "cannot extract $deb"
    dpkg-deb -f "$deb" Package Version | sed 's/^[^:]*: //' | paste -sd' ' >>"$stage/PACKAGES"
  done
  sort -o "$stage/PACKAGES" "$stage/PACKAGES"

  # JIT needs libllvm, which is not fetched (jit = off); the bitcode is only for JIT inlining.
  # Documentation and message translations are not used (lc_messages = C).
  local pg="$stage/usr/lib/postgresql/$PG_MAJOR"
  rm -rf "$pg/lib/llvmjit.so" "$pg/lib/llvmjit_types.bc" "$pg/lib/bitcode" \
    "$stage"/usr/share/{doc,man,info,locale,lintian,gdb,gcc}

  # Relink every executable to trixie's loader and the root's libraries. The paths are final
  # ($ROOT, not the staging dir): the stage is renamed to $ROOT below. patchelf runs from a copy,
  # through the loader, since it is one of the files it patches. .relinked lists what it changed.
  local sloader="$stage/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" slib="$stage/usr/lib/x86_64-linux-gnu" pe="$DIR/patchelf.tmp"
  [ -x "$sloader" ] || die "trixie's libc6 has no usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
  cp "$stage/usr/bin/patchelf" "$pe"
  : >"$stage/.relinked"
  while IFS= read -r -d '' f; do
    # libc.so.6 and a few other libraries have an interpreter too; they are loaded, not run.
    case "$(basename "$f")" in lib*.so* | ld-linux*) continue ;; esac
    "$sloader" --library-path "$slib" "$pe" --print-interpreter "$f" >/dev/null 2>&1 || continue
    "$sloader" --library-path "$slib" "$pe" --set-interpreter "$LOADER" --force-rpath --set-rpath "$LIBDIR" "$f" ||
      die "patchelf failed on ${f#"$stage"}"
    echo "${f#"$stage"/}" >>"$stage/.relinked"
  done < <(elf_files "$stage")
  rm -f "$pe"
  log "relinked $(wc -l <"$stage/.relinked") executables to $PG_SUITE's loader"

  rm -rf "$ROOT"
  mv "$stage" "$ROOT" || die "cannot move $stage to $ROOT"

  # Every ELF file: each library it needs resolves inside the root (executables through their
  # RPATH, as they will run; shared objects such as vector.so through the root's lib dir, as
  # postgres's RPATH provides it when it dlopens them).
  local out checked=0
  bad=""
  while IFS= read -r -d '' f; do
    case "$(basename "$f")" in ld-linux*) continue ;; esac
    if grep -qxF "${f#"$ROOT"/}" "$ROOT/.relinked"; then
      out="$("$LOADER" --list "$f" 2>&1)" || true
    else
      out="$("$LOADER" --library-path "$LIBDIR" --list "$f" 2>&1)" || true
    fi
    checked=$((checked + 1))
    line="$(printf '%s\n' "$out" | grep -E 'not found|=> /|error' | grep -v "=> $ROOT/" | head -n 1)" || true
    [ -z "$line" ] || bad="$bad${bad:+; }${f#"$ROOT"/}: $(tr -s ' \t' ' ' <<<"$line")"
  done < <(elf_files "$ROOT")
  [ -z "$bad" ] || die "libraries missing from the root: $bad"
  log "checked $checked ELF files: every library they need is in the root"

  # The relocation: a relocated installation finds its dirs from its binary's path.
  local sharedir
  sharedir="$("$BINDIR/pg_config" --sharedir 2>/dev/null)" || die "pg_config does not run"
  [ "$sharedir" = "$ROOT/usr/share/postgresql/$PG_MAJOR" ] || die "pg_config --sharedir is $sharedir, not inside $ROOT"
  [ -f "$sharedir/extension/vector.control" ] || die "no extension/vector.control in $sharedir"
  local v
  v="$("$BINDIR/postgres" --version 2>&1)" || true
  [[ "$v" == "postgres (PostgreSQL) $PG_MAJOR."* ]] || die "postgres --version: $v"

  echo "$STAMP" >"$MARKER"
  rm -rf "$debs" "$DIR/apt/cache" "$DIR/apt/state/lists"
  log "installed $(wc -l <"$ROOT/PACKAGES") packages ($(grep -E "^postgresql-$PG_MAJOR(-pgvector)? " "$ROOT/PACKAGES" | paste -sd, | sed 's/,/, /g')) in $((SECONDS - t0)) s"
  if command -v flock >/dev/null; then exec 9>&-; fi
}

# --- running it -------------------------------------------------------------------------------

IS_ROOT=0
[ "$(id -u)" = 0 ] && IS_ROOT=1

# Runs a command as the server's user with a clean environment (no LD_* from the caller: they
# would reach trixie's loader), from / (root's cwd may be closed to that user).
as_server() {
  if [ "$IS_ROOT" = 1 ]; then
    (cd / && setpriv --reuid="$SERVER_USER" --regid="$SERVER_USER" --init-groups --reset-env --no-new-privs \
      env LC_ALL=C TZ=UTC "$@")
  else
    (cd / && env -i HOME="${HOME:-/}" PATH=/usr/bin:/bin LC_ALL=C TZ=UTC "$@")
  fi
}

ensure_user() {
  [ "$IS_ROOT" = 1 ] || return 0
  id -u "$SERVER_USER" >/dev/null 2>&1 && return 0
  command -v setpriv >/dev/null || die "setpriv (util-linux) is needed to run the server as $SERVER_USER"
  command -v useradd >/dev/null || die "PostgreSQL does not run as root, and useradd is missing to create $SERVER_USER"
  log "creating the system user $SERVER_USER (PostgreSQL does not run as root)"
  # A concurrent start may create it first.
  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
    --comment "raggrep test PostgreSQL" "$SERVER_USER" 2>/dev/null || id -u "$SERVER_USER" >/dev/null 2>&1 ||
    die "useradd $SERVER_USER failed"
}

# As root: the server's user must be able to search every directory down to PATH (the tool root,
# DATADIR's parent). Where it cannot, it gets search permission (x, not read) through an ACL on that
# directory alone.
ensure_reachable() {
  [ "$IS_ROOT" = 1 ] || return 0
  as_server test -x "$1" && return 0
  local p="" part parts
  IFS=/ read -ra parts <<<"${1#/}"
  for part in "${parts[@]}"; do
    [ -n "$part" ] || continue
    p="$p/$part"
    as_server test -x "$p" && continue
    "$ROOT/usr/bin/setfacl" -m "u:$SERVER_USER:x" "$p" ||
      die "$SERVER_USER cannot reach $1 and setfacl on $p failed; use a directory it can reach (e.g. under /tmp), or chmod o+x $p"
    log "gave $SERVER_USER search permission (ACL u:$SERVER_USER:x) on $p, to reach $1"
  done
  as_server test -x "$1" || die "$SERVER_USER still cannot reach $1"
}

# A quoted string for postgresql.conf.
conf_quote() { printf "'%s'" "${1//\'/\'\'}"; }

# The recorded port (empty if none).
recorded_port() {
  [ -f "$DATA/$CONF_NAME" ] || return 0
  sed -n 's/^port = \([0-9][0-9]*\)$/\1/p' "$DATA/$CONF_NAME" | tail -n 1
}

# Ports any socket on this machine has bound (any state, IPv4 and IPv6), one per line, decimal.
used_ports() {
  cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk 'NR > 1 { split($2, a, ":"); print a[2] }' |
    while read -r hex; do [ -n "$hex" ] && echo $((16#$hex)); done | sort -u
}

# Ports something listens on: a restart only cares about those (PostgreSQL binds with
# SO_REUSEADDR, so the TIME_WAIT sockets a killed server leaves on its port do not stop it).
listening_ports() {
  cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk 'NR > 1 && $4 == "0A" { split($2, a, ":"); print a[2] }' |
    while read -r hex; do [ -n "$hex" ] && echo $((16#$hex)); done | sort -u
}

# (Not `listening_ports | grep -q`: with pipefail, grep's early exit fails the pipeline by SIGPIPE.)
port_in_use() { grep -qx "$1" <<<"$(listening_ports)"; }

# A free port, outside the kernel's ephemeral range if it can (so that an outgoing connection does
# not take it before a restart).
pick_port() {
  local lo hi used p try
  read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || { lo=32768 hi=60999; }
  used="$(used_ports)"
  for try in $(seq 1 300); do
    p=$((15000 + (RANDOM * 32768 + RANDOM) % 45000))
    [ "$try" -le 200 ] && [ "$p" -ge "$lo" ] && [ "$p" -le "$hi" ] && continue
    grep -qx "$p" <<<"$used" || {
      echo "$p"
      return 0
    }
  done
  die "no free port found"
}

# The postmaster's PID if it runs (postmaster.pid names a live process running our postgres).
postmaster_pid() {
  local pid
  pid="$(head -n 1 "$DATA/postmaster.pid" 2>/dev/null)" || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  is_our_postgres "$pid" || return 1
  echo "$pid"
}

is_our_postgres() { [ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$BINDIR/postgres" ]; }

alive() { [ -e "/proc/$1" ] && ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat" 2>/dev/null; }

# PIDs of our postgres processes working in DATADIR (the postmaster and its children chdir there).
data_processes() {
  local d pid
  for d in /proc/[0-9]*; do
    pid="${d#/proc/}"
    is_our_postgres "$pid" || continue
    [ "$(readlink "$d/cwd" 2>/dev/null)" = "$DATA" ] && alive "$pid" && echo "$pid"
  done
  return 0
}

log_tail() {
  [ -f "$DATA/log/postgres.log" ] || return 0
  echo "--- $DATA/log/postgres.log (tail)" >&2
  tail -n 25 "$DATA/log/postgres.log" | sed 's/^/    /' >&2
}

url() {
  local port password
  port="$(recorded_port)"
  password="$(cat "$DATA/$PASSWORD_NAME" 2>/dev/null)" || die "$DATA has no $PASSWORD_NAME (not started by this script?)"
  [ -n "$port" ] || die "$DATA/$CONF_NAME records no port"
  echo "postgres://postgres:$password@127.0.0.1:$port/postgres"
}

# psql as the caller (a client needs no other user), with the connection as environment defaults so
# that ARGS can override them; -X: no ~/.psqlrc.
run_psql() {
  env -u LD_LIBRARY_PATH -u LD_PRELOAD PGHOST=127.0.0.1 PGPORT="$(recorded_port)" PGUSER=postgres PGDATABASE=postgres \
    PGPASSWORD="$(cat "$DATA/$PASSWORD_NAME")" PGCONNECT_TIMEOUT=10 PGGSSENCMODE=disable PGSSLMODE=disable \
    PGCLIENTENCODING=UTF8 "$BINDIR/psql" -X "$@"
}

chown_server() { if [ "$IS_ROOT" = 1 ]; then chown "$SERVER_USER:$SERVER_USER" "$@"; fi; }

init_data() {
  if [ -n "$(ls -A "$DATA" 2>/dev/null)" ]; then
    die "$DATA is neither empty nor a PostgreSQL data directory"
  fi
  local tmp password out
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/raggrep-pg-init.XXXXXX")"
  password="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  printf '%s\n' "$password" >"$tmp/pw"
  chmod 700 "$tmp"
  chmod 600 "$tmp/pw"
  chown_server "$tmp" "$tmp/pw"
  chown_server "$DATA"
  chmod 700 "$DATA"
  # The builtin provider's C.UTF-8: Unicode character classes and case mapping, without ICU or the
  # host's locale files; --no-sync: a throwaway cluster (the server itself keeps fsync on).
  if ! out="$(as_server "$BINDIR/initdb" -D "$DATA" -U postgres --pwfile="$tmp/pw" --auth=scram-sha-256 \
    --encoding=UTF8 --locale=C --locale-provider=builtin --builtin-locale=C.UTF-8 --no-sync --no-instructions 2>&1)"; then
    rm -rf "$tmp"
    printf '%s\n' "$out" | tail -n 25 | sed 's/^/    /' >&2
    die "initdb failed in $DATA"
  fi
  rm -rf "$tmp"
  mkdir -p "$DATA/log"
  chmod 700 "$DATA/log"
  printf '%s\n' "$out" >"$DATA/log/initdb.log"
  printf '%s\n' "$password" >"$DATA/$PASSWORD_NAME"
  chmod 600 "$DATA/$PASSWORD_NAME"
  cat >"$DATA/pg_hba.conf" <<'EOF'
# tests/pg/postgres.sh: a password (SCRAM) for every connection, on the socket in the data
# directory and on 127.0.0.1 (the only address the server listens on); no trust.
local all all              scram-sha-256
host  all all 127.0.0.1/32 scram-sha-256
EOF
  chmod 600 "$DATA/pg_hba.conf"
  printf "\n# tests/pg/postgres.sh's settings (port, addresses, socket, JIT).\ninclude '%s'\n" "$CONF_NAME" >>"$DATA/postgresql.conf"
  chown_server -R "$DATA/log" "$DATA/$PASSWORD_NAME" "$DATA/pg_hba.conf"
}

# Writes raggrep-test.conf for PORT.
write_conf() {
  local port="$1" sockdir zone=UTC
  sockdir="$DATA"
  # A unix socket path holds at most 107 bytes; a deeper DATADIR gets no socket (TCP only).
  if [ $((${#DATA} + ${#port} + 10)) -gt 107 ]; then
    sockdir=""
    log "note: $DATA is too long a path for a unix socket; TCP only"
  fi
  # Debian's PostgreSQL reads the host's /usr/share/zoneinfo; GMT is built in.
  [ -f /usr/share/zoneinfo/UTC ] || zone=GMT
  cat >"$DATA/$CONF_NAME" <<EOF
# Written by tests/pg/postgres.sh at every start.
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = $(conf_quote "$sockdir")
# libllvm is not installed (llvmjit.so removed).
jit = off
timezone = '$zone'
log_timezone = '$zone'
lc_messages = 'C'
EOF
  chown_server "$DATA/$CONF_NAME"
  chmod 600 "$DATA/$CONF_NAME"
}

# Starts the server on PORT; true once it accepts password connections on 127.0.0.1. False (the
# log says why) if it could not start.
launch() {
  write_conf "$1"
  local logfile="$DATA/log/postgres.log"
  : >>"$logfile"
  chown_server "$logfile"
  local mark
  mark="$(wc -l <"$logfile")"
  : >"$DATA/log/pg_ctl.err"
  chown_server "$DATA/log/pg_ctl.err"
  if ! as_server "$BINDIR/pg_ctl" start -D "$DATA" -l "$logfile" -w -t "$TIMEOUT" -s >/dev/null 2>"$DATA/log/pg_ctl.err"; then
    START_LOG="$(tail -n +"$((mark + 1))" "$logfile")"
    return 1
  fi
  # pg_ctl -w waited for "ready" in postmaster.pid; check the URL's way in too.
  local deadline=$((SECONDS + TIMEOUT))
  until run_psql -qAt -c 'SELECT 1' >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      START_LOG="$(tail -n +"$((mark + 1))" "$logfile")"
      return 1
    fi
    sleep 0.1
  done
}

cmd_start() { # [fixed]: the recorded port or nothing
  local fixed="${1:-}" port tries=0
  ensure_user
  mkdir -p "$DATA" || die "cannot create $DATA"
  DATA="$(cd "$DATA" && pwd -P)"
  ensure_reachable "$BINDIR"
  ensure_reachable "$(dirname "$DATA")"
  if pid="$(postmaster_pid)"; then
    log "already running (pid $pid)"
    url
    return 0
  fi
  [ -f "$DATA/PG_VERSION" ] || init_data
  [ "$(cat "$DATA/PG_VERSION")" = "$PG_MAJOR" ] || die "$DATA is a PostgreSQL $(cat "$DATA/PG_VERSION") data directory, not $PG_MAJOR"
  [ -f "$DATA/$PASSWORD_NAME" ] || die "$DATA was not made by this script (no $PASSWORD_NAME)"
  port="$(recorded_port)"
  if [ -n "$fixed" ]; then
    [ -n "$port" ] || die "$DATA records no port to restart on"
    port_in_use "$port" && die "port $port (recorded in $DATA) is taken by another process; cannot restart on the same port"
  elif [ -z "$port" ] || port_in_use "$port"; then
    port="$(pick_port)"
  fi
  until launch "$port"; do
    tries=$((tries + 1))
    # Another process may take a freshly picked port between the check and the bind.
    if [ -z "$fixed" ] && [ "$tries" -lt 5 ] && grep -q 'could not bind\|Address already in use' <<<"$START_LOG"; then
      port="$(pick_port)"
      continue
    fi
    cat "$DATA/log/pg_ctl.err" >&2 2>/dev/null || true
    log_tail
    die "the server in $DATA did not start on 127.0.0.1:$port"
  done
  url
}

cmd_stop() { # [quiet]
  local pid
  if ! pid="$(postmaster_pid)"; then
    [ -n "${1:-}" ] || log "not running ($DATA)"
    return 0
  fi
  as_server "$BINDIR/pg_ctl" stop -D "$DATA" -m fast -w -t "$TIMEOUT" -s >&2 || {
    log_tail
    die "fast shutdown of pid $pid did not finish within ${TIMEOUT}s"
  }
}

# A crash: SIGKILL to the postmaster, then to whatever of its children is left (they would also
# notice its death and exit, but not all at once), so that a restart finds none attached. Waits
# until the postmaster is reaped, not only dead: a zombie still passes the "is the PID in
# postmaster.pid alive" check of the next start (here the init reaps after about a second).
cmd_kill() {
  local pid deadline left
  if ! pid="$(postmaster_pid)"; then
    log "not running ($DATA)"
    return 0
  fi
  kill -KILL "$pid"
  deadline=$((SECONDS + TIMEOUT))
  while :; do
    mapfile -t left < <(data_processes)
    [ -e "/proc/$pid" ] || [ "${#left[@]}" -gt 0 ] || break
    [ "${#left[@]}" -eq 0 ] || kill -KILL "${left[@]}" 2>/dev/null || true
    [ "$SECONDS" -lt "$deadline" ] ||
      die "after SIGKILL, postmaster $pid was not reaped (or its children did not exit: ${left[*]}) within ${TIMEOUT}s"
    sleep 0.05
  done
}

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -n '/^#   bash/p' | sed 's/^#//' >&2
  exit 2
}

cmd="${1:-}"
[ -n "$cmd" ] || usage
shift
case "$cmd" in
  install)
    do_install
    echo "$DIR"
    exit 0
    ;;
  start | url | psql | stop | kill | restart) ;;
  *) usage ;;
esac
[ $# -ge 1 ] || usage
DATA="$1"
shift
START_LOG=""

case "$cmd" in
  start)
    do_install
    cmd_start
    ;;
  restart)
    do_install
    DATA="$(cd "$DATA" 2>/dev/null && pwd -P)" || die "no such data directory: $1"
    cmd_stop quiet
    cmd_start fixed
    ;;
  *)
    DATA="$(cd "$DATA" 2>/dev/null && pwd -P)" || die "no such data directory: $1"
    case "$cmd" in
      url) url ;;
      psql)
        is_installed || die "not installed (run: $0 install)"
        [ -f "$DATA/$PASSWORD_NAME" ] || die "$DATA was not started by this script"
        run_psql "$@"
        ;;
      stop) cmd_stop ;;
      kill) cmd_kill ;;
    esac
    ;;
esac
