#!/usr/bin/env bash
# Builds the release bundle from this checkout into dist/:
#
#   raggrep-<version>-linux-x64.tar.gz
#     raggrep-<version>-linux-x64/
#       bin/raggrep                                       the binary
#       share/raggrep/models/all-minilm-l6-v2-int8/       default model, tokenizer, query model
#       share/raggrep/runtime/onnxruntime-1.31.1/         ONNX Runtime's library + its licences
#       README.md LICENSE THIRD_PARTY.md
#   SHA256SUMS
#
# The binary looks for share/raggrep next to its own bin/ directory before the user's cache, so
# the bundle works unpacked anywhere, offline, without Rust or Python.
#
#   bash scripts/package.sh           # release build (the artefact to publish)
#   bash scripts/package.sh --quick   # same layout around the debug binary, named …-debug.tar.gz
#                                     # (the install test in the test command; no release build)
#
# Reproducible: files sorted, owners and times fixed (the last commit's time), gzip without a
# name or time stamp, the binary stripped; two runs give the same bytes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$PWD"

profile=release
suffix=""
case "${1:-}" in
  "") ;;
  --quick) profile=debug suffix="-debug" ;;
  *) echo "usage: bash scripts/package.sh [--quick]" >&2; exit 2 ;;
esac

bash scripts/bootstrap.sh
if [[ $profile == release ]]; then
  cargo build --release --locked --bin raggrep
else
  cargo build --locked --bin raggrep
fi

version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
name="raggrep-${version}-linux-x64"
cache="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
model="$cache/models/all-minilm-l6-v2-int8"
runtime="$cache/runtime/onnxruntime-1.31.1"
for needed in "$model/model.onnx" "$model/tokenizer.json" "$model/raggrep-model.json" "$runtime/libonnxruntime.so.1.31.1"; do
  [[ -f $needed ]] || { echo "package: $needed is missing (the bootstrap should have installed it)" >&2; exit 1; }
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
stage="$work/$name"
mkdir -p "$stage/bin" "$stage/share/raggrep/models" "$stage/share/raggrep/runtime"
cp "target/$profile/raggrep" "$stage/bin/raggrep"
strip "$stage/bin/raggrep" 2>/dev/null || true
cp -r "$model" "$stage/share/raggrep/models/"
cp -r "$runtime" "$stage/share/raggrep/runtime/"
cp README.md LICENSE THIRD_PARTY.md "$stage/"
chmod -R u=rwX,go=rX "$stage"

mkdir -p dist
epoch="$(git log -1 --format=%ct 2>/dev/null || echo 0)"
tarball="dist/$name$suffix.tar.gz"
tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner --format=gnu \
  -C "$work" -cf - "$name" | gzip -9 -n >"$tarball.tmp"
mv "$tarball.tmp" "$tarball"
(cd dist && sha256sum -- *.tar.gz *.vsix 2>/dev/null >SHA256SUMS.tmp || true; mv SHA256SUMS.tmp SHA256SUMS)
size="$(du -h "$tarball" | cut -f1)"
echo "package: $repo/$tarball ($size; $(tar -tzf "$tarball" | wc -l) entries)" >&2
echo "$repo/$tarball"
