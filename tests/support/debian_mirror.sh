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
