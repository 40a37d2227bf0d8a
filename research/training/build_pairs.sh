#!/usr/bin/env bash
# Runs build_pairs.py in the benchmark's pinned tree-sitter venv (made by benches/retrieval/build.sh).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/bench_venv.sh"
# Pinned crates missing from the cargo cache are fetched through cargo first: a crate the script
# has to skip would change the package list, and with it the seeded split of every learned part.
# One throwaway project per crate, so the pins never have to resolve together.
missing="$("$venv/bin/python" "$here/build_pairs.py" --missing-crates)"
while read -r name version; do
  [[ -n "$name" ]] || continue
  echo "build_pairs.sh: fetching the pinned crate $name $version (not in the cargo cache)" >&2
  scratch="$(mktemp -d)"
  mkdir -p "$scratch/src"
  : > "$scratch/src/lib.rs"
  printf '[package]\nname = "fetch-pinned-crate"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\n%s = "=%s"\n' \
    "$name" "$version" > "$scratch/Cargo.toml"
  if ! cargo fetch --quiet --manifest-path "$scratch/Cargo.toml"; then
    echo "build_pairs.sh: cannot fetch $name $version; build_pairs.py will skip it (the split changes)" >&2
  fi
  rm -rf "$scratch"
done <<< "$missing"
exec nice -n 19 "$venv/bin/python" "$here/build_pairs.py" "$@"
