# shellcheck shell=bash
# Sourced by the tests that fetch Debian trixie packages through a private apt root (the Helix
# test, tests/pg/postgres.sh): where this machine's Debian archive is, never a host name written
# into a script.

# The first URI (and its Signed-By keyring) of this machine's Debian main-archive source: a deb822
# stanza of type deb with a plain suite name (bookworm, stable; not bookworm-security), or else
# the same from a one-line sources.list entry. Prints "URI<TAB>KEYRING".
debian_mirror() {
  local found
  found="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '
    function plain(s,   a, n, i) { n = split(s, a, /[ \t]+/); for (i = 1; i <= n; i++) if (a[i] != "" && a[i] !~ /[-\/]/) return 1; return 0 }
    function flush(   u) {
      if (!done && types ~ /(^|[ \t])deb([ \t]|$)/ && tolower(enabled) != "no" && plain(suites) && uris != "") {
        split(uris, u, /[ \t]+/); print u[1] "\t" signed; done = 1
      }
      types = uris = suites = signed = enabled = ""
    }
    /^[ \t]*#/ { next }
    /^[ \t]*$/ { flush(); next }
    /^[A-Za-z-]+:/ {
      key = tolower(substr($0, 1, index($0, ":") - 1)); val = substr($0, index($0, ":") + 1)
      gsub(/^[ \t]+|[ \t]+$/, "", val)
      if (key == "types") types = val; else if (key == "uris") uris = val
      else if (key == "suites") suites = val; else if (key == "signed-by") signed = val
      else if (key == "enabled") enabled = val
    }
    END { flush() }')"
  if [ -z "$found" ]; then
    found="$(cat /etc/apt/sources.list 2>/dev/null | awk '
      $1 == "deb" {
        i = 2; opts = ""
        if ($i ~ /^\[/) { while (i <= NF) { opts = opts " " $i; if ($i ~ /\]$/) { i++; break } i++ } }
        if ($(i + 1) !~ /[-\/]/) {
          signed = ""; if (match(opts, /signed-by=[^] ]+/)) signed = substr(opts, RSTART + 10, RLENGTH - 10)
          print $i "\t" signed; exit
        }
      }')"
  fi
  [ -n "$found" ] && printf '%s\n' "$found"
}

# A private apt root in DIR for Debian SUITE (main), from this machine's archive: sources, lists,
# state and cache of its own. Of the machine's apt configuration it keeps the network settings
# (proxies, timeouts, TLS, date checks) and nothing else (hooks, extra index targets). Prints
# the apt.conf to use as APT_CONFIG, or fails with one line on stderr.
private_apt_root() { # DIR SUITE
  local apt="$1" suite="$2" mirror uri keyring
  mirror="$(debian_mirror)" || {
    echo "no Debian mirror found in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list" >&2
    return 1
  }
  uri="${mirror%%$'\t'*}"
  keyring="${mirror#*$'\t'}"
  [ -f "$keyring" ] || keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  [ -f "$keyring" ] || { echo "no Debian archive keyring ($keyring); install debian-archive-keyring" >&2; return 1; }
  echo "Debian $suite from $uri" >&2
  mkdir -p "$apt/state/lists/partial" "$apt/cache/archives/partial" "$apt/sources.list.d" "$apt/preferences.d"
  : >"$apt/status"
  echo "deb [signed-by=$keyring] $uri $suite main" >"$apt/sources.list"
  {
    apt-config dump 2>/dev/null | grep -E '^Acquire::(Check-Valid-Until|Check-Date|Max-FutureTime|Retries|ForceIPv4|ForceIPv6|(http|https|ftp)::(Proxy|Timeout|Verify-Peer|Verify-Host|CaInfo|CaPath|SslCert|SslKey|Pipeline-Depth|No-Cache))([: ]|$)' || true
    cat <<CONF
Dir::Etc::main "/dev/null";
Dir::Etc::parts "/dev/null";
Dir::Etc::sourcelist "$apt/sources.list";
Dir::Etc::sourceparts "$apt/sources.list.d";
Dir::Etc::preferences "$apt/preferences";
Dir::Etc::preferencesparts "$apt/preferences.d";
Dir::State "$apt/state";
Dir::State::status "$apt/status";
Dir::Cache "$apt/cache";
Debug::NoLocking "true";
APT::Architecture "amd64";
APT::Architectures { "amd64"; };
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
CONF
    # As root, apt would drop to _apt, which cannot write into a private home directory.
    if [ "$(id -u)" = 0 ]; then echo 'APT::Sandbox::User "root";'; fi
  } >"$apt/apt.conf"
  printf '%s\n' "$apt/apt.conf"
}
