#!/usr/bin/env bash
# Builds the release bundle from this checkout into dist/:
#
#   raggrep-<version>-linux-x64.tar.gz
#     raggrep-<version>-linux-x64/
#       bin/raggrep                                       the binary
#       share/raggrep/models/all-minilm-l6-v2-code2-int8/  default model, tokenizer, query model, reranker, licence
#       share/raggrep/models/all-minilm-l6-v2-int8/       all-MiniLM-L6-v2 itself (the vector store's model), licence
#       share/raggrep/runtime/onnxruntime-1.31.1/         ONNX Runtime's library + its licences
#       share/raggrep/nvim/                               the Neovim plugin (finds ../../../bin/raggrep)
#       share/raggrep/helix/languages.toml                the Helix snippet
#       share/{bash-completion,zsh,fish}/…, share/man/man1/raggrep.1   completions and the manual page
#       share/raggrep/models/manifest.json                which models these are (id, sha256, licence, provenance)
#       README.md LICENSE THIRD_PARTY.md docs/            the user's documentation
#   raggrep-linux-x64.vsix
#     the VS Code extension for linux-x64 with the same bin/ and share/raggrep/{models,runtime}
#     (the default model without the reranker): it runs its own server, no raggrep on PATH and
#     no cache needed
#   SHA256SUMS
#
# The binary looks for share/raggrep next to its own bin/ directory before the user's cache, so
# the bundle works unpacked anywhere, offline, without Rust or Python.
#
#   bash scripts/package.sh           # release build (the artefacts to publish)
#   bash scripts/package.sh --quick   # same layouts around the debug binary, named …-debug.*
#                                     # (the install and editor tests; no release build)
#
# Needs Node.js 20+ and npm for the .vsix (npm ci in editors/vscode when its tools are missing).
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
model="$cache/models/all-minilm-l6-v2-code2-int8"
plain="$cache/models/all-minilm-l6-v2-int8"
runtime="$cache/runtime/onnxruntime-1.31.1"
for needed in "$model/model.onnx" "$model/tokenizer.json" "$model/raggrep-model.json" "$model/rerank-model.onnx" "$model/rerank-model.json" "$model/static-table.bin" \
  "$plain/model.onnx" "$plain/tokenizer.json" "$plain/raggrep-model.json" "$runtime/libonnxruntime.so.1.31.1"; do
  [[ -f $needed ]] || { echo "package: $needed is missing (the bootstrap should have installed it)" >&2; exit 1; }
done

# What ships is what models/manifest.json names: every model file in the bundle has its entry's
# sha256 (a cache left by another checkout's bootstrap fails here, not in a user's hands).
python3 - "$repo/models/manifest.json" "$model" "$plain" <<'PY' || exit 1
import hashlib, json, sys
from pathlib import Path
manifest, dirs = Path(sys.argv[1]), [Path(d) for d in sys.argv[2:]]
entries = {m["id"]: m for m in json.loads(manifest.read_text())["models"]}
for d in dirs:
    for meta in sorted(d.glob("*.json")):
        if meta.name == "tokenizer.json":
            continue
        info = json.loads(meta.read_text())
        model_id, onnx = info.get("id"), d / meta.name.replace(".json", ".onnx").replace("raggrep-model", "model")
        if model_id not in entries:
            sys.exit(f"package: {meta} names {model_id}, which {manifest} does not list")
        actual = hashlib.sha256(onnx.read_bytes()).hexdigest()
        if actual != entries[model_id]["sha256"]:
            sys.exit(f"package: {onnx} has sha256 {actual}, {manifest} says {entries[model_id]['sha256']} -- rerun scripts/bootstrap.sh")
    # The static tier has no metadata file: it is the code model's, by the manifest's entry.
    table = d / "static-table.bin"
    static = [m for m in entries.values() if m.get("role") == "static"]
    if table.exists() and static and hashlib.sha256(table.read_bytes()).hexdigest() != static[0]["sha256"]:
        sys.exit(f"package: {table} does not have the sha256 {manifest} names -- rerun scripts/bootstrap.sh")
PY

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
stage="$work/$name"
mkdir -p "$stage/bin" "$stage/share/raggrep/models" "$stage/share/raggrep/runtime"
cp "target/$profile/raggrep" "$stage/bin/raggrep"
strip "$stage/bin/raggrep" 2>/dev/null || true
cp -r "$model" "$stage/share/raggrep/models/"
# The vector store (`raggrep db`, MCP `vector_db`) embeds with all-MiniLM-L6-v2 itself, as seed
# 002's stack does: its document model alone (the query model and reranker belong to the code index).
mkdir -p "$stage/share/raggrep/models/$(basename "$plain")"
cp "$plain/model.onnx" "$plain/tokenizer.json" "$plain/raggrep-model.json" "$stage/share/raggrep/models/$(basename "$plain")/"
# all-MiniLM-L6-v2 and the models derived from it are Apache-2.0, which asks for its text beside them.
licence=/usr/share/common-licenses/Apache-2.0
[[ -f $licence ]] || { echo "package: $licence is missing (Debian's base-files ships it)" >&2; exit 1; }
for dir in "$model" "$plain"; do cp "$licence" "$stage/share/raggrep/models/$(basename "$dir")/LICENSE"; done
cp -r "$runtime" "$stage/share/raggrep/runtime/"
mkdir -p "$stage/share/raggrep/nvim" "$stage/share/raggrep/helix"
cp -r editors/nvim/lua editors/nvim/plugin editors/nvim/lsp editors/nvim/README.md "$stage/share/raggrep/nvim/"
cp editors/helix/languages.toml "$stage/share/raggrep/helix/"
cp README.md LICENSE THIRD_PARTY.md "$stage/"
cp -r models/manifest.json "$stage/share/raggrep/models/"
cp -r docs "$stage/"
# Shell completions and the manual page, generated from the CLI definition by the binary itself,
# where shells and man look under a prefix (share/ beside bin/).
mkdir -p "$stage/share/bash-completion/completions" "$stage/share/zsh/site-functions" \
  "$stage/share/fish/vendor_completions.d" "$stage/share/man/man1"
"$stage/bin/raggrep" completions bash >"$stage/share/bash-completion/completions/raggrep"
"$stage/bin/raggrep" completions zsh >"$stage/share/zsh/site-functions/_raggrep"
"$stage/bin/raggrep" completions fish >"$stage/share/fish/vendor_completions.d/raggrep.fish"
"$stage/bin/raggrep" man >"$stage/share/man/man1/raggrep.1"
chmod -R u=rwX,go=rX "$stage"

mkdir -p dist
epoch="$(git log -1 --format=%ct 2>/dev/null || echo 0)"
tarball="dist/$name$suffix.tar.gz"
tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner --format=gnu \
  -C "$work" -cf - "$name" | gzip -9 -n >"$tarball.tmp"
mv "$tarball.tmp" "$tarball"

# The VS Code extension: its bundle (type-checked, minified) plus the same server, model and
# runtime, packaged by vsce from a staging copy so the checkout stays clean.
ext="$repo/editors/vscode"
vsix="dist/raggrep-linux-x64$suffix.vsix"
(
  cd "$ext"
  [[ -x node_modules/.bin/vsce && -x node_modules/.bin/tsc ]] || npm ci --no-audit --no-fund --loglevel=error
  npm run --silent check
  node esbuild.mjs --production
) >&2
vstage="$work/vsix"
mkdir -p "$vstage/dist" "$vstage/share/raggrep"
# Without its scripts vsce runs no prepublish step (it would need node_modules in the staging copy).
node -e 'const p = require(process.argv[1]); delete p.scripts; delete p.devDependencies;
  require("fs").writeFileSync(process.argv[2], JSON.stringify(p, null, 2) + "\n");' "$ext/package.json" "$vstage/package.json"
cp "$ext/README.md" "$ext/CHANGELOG.md" "$ext/LICENSE" "$ext/.vscodeignore" "$vstage/"
cp -r "$ext/images" "$vstage/"
cp "$ext/dist/extension.js" "$vstage/dist/"
cp -r "$stage/bin" "$vstage/"
cp -r "$stage/share/raggrep/models" "$stage/share/raggrep/runtime" "$vstage/share/raggrep/"
# The editor never asks for `--rerank` (a CLI and MCP option) nor uses the vector store (CLI and
# MCP), and their 23 MB each would break the extension's 60 MB budget: the extension's server
# says "no reranker is installed" if asked.
rm -f "$vstage"/share/raggrep/models/*/rerank-model.*
rm -rf "$vstage/share/raggrep/models/$(basename "$plain")"
# The manifest lists every shipped model, most of which the extension leaves out (THIRD_PARTY.md,
# which it carries, says what the one it holds is).
rm -f "$vstage/share/raggrep/models/manifest.json"
cp THIRD_PARTY.md "$vstage/"
chmod -R u=rwX,go=rX "$vstage"
find "$vstage" -exec touch -h -d "@$epoch" {} +
(cd "$vstage" && "$ext/node_modules/.bin/vsce" package --no-dependencies --allow-missing-repository \
  --no-rewrite-relative-links --target linux-x64 --out "$repo/$vsix.tmp") >&2
# vsce stamps the files it generates (manifest, readme, changelog) with the current time and
# adds entries in the order its reads finish; one time and a sorted order (the two manifests
# first, as vsce writes them) make two builds byte-identical.
python3 - "$repo/$vsix.tmp" "$epoch" <<'PY'
import sys, time, zipfile
path, epoch = sys.argv[1], int(sys.argv[2])
stamp = time.gmtime(max(epoch, 315532800))[:6]  # zip dates start in 1980
with zipfile.ZipFile(path) as src:
    entries = [(info, src.read(info)) for info in src.infolist()]
manifests = ("extension.vsixmanifest", "[Content_Types].xml")
entries.sort(key=lambda e: (e[0].filename not in manifests, manifests.index(e[0].filename) if e[0].filename in manifests else 0, e[0].filename))
with zipfile.ZipFile(path, "w") as out:
    for info, data in entries:
        fixed = zipfile.ZipInfo(info.filename, stamp)
        fixed.external_attr, fixed.create_system = info.external_attr, info.create_system
        fixed.compress_type = info.compress_type
        out.writestr(fixed, data, compresslevel=9)
PY
mv "$vsix.tmp" "$vsix"
# The Marketplace takes larger packages, but every user downloads this one whole; the editor test
# holds the quick package's other files to the budget less the release server's share.
vsix_mb=$(( $(stat -c %s "$vsix") / 1000000 ))
if [[ $profile == release ]] && (( vsix_mb >= 60 )); then
  echo "package: $vsix would be $vsix_mb MB, over the extension's 60 MB budget (not kept)" >&2
  rm -f "$vsix"
  exit 1
fi

(cd dist && sha256sum -- *.tar.gz *.vsix 2>/dev/null >SHA256SUMS.tmp || true; mv SHA256SUMS.tmp SHA256SUMS)
echo "package: $repo/$tarball ($(du -h "$tarball" | cut -f1); $(tar -tzf "$tarball" | wc -l) entries)" >&2
echo "package: $repo/$vsix ($(du -h "$vsix" | cut -f1))" >&2
echo "$repo/$tarball"
echo "$repo/$vsix"
