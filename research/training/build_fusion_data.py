#!/usr/bin/env python3
"""Build a retrieval dataset in the benchmark's exact format from TRAINING packages (issue 16).

Usage:  research/training/build_fusion_data.sh [--force] [--survey]
        research/training/build_fusion_data.sh --packages A,B [--root NAME=DIR]
            [--typescript-from-source-maps] --out DIR
        (runs this file in the benchmark's tree-sitter venv, created by benches/retrieval/build.sh)

Purpose: fit learned fusion weights on the real engine's features (`cargo bench --bench
retrieval` style: index a corpus, run the queries, read the candidates' features) WITHOUT
touching any benchmark package. Same layout, same blanking, same filters and query rules as
benches/retrieval/build.py, because the corpus of every package is produced by calling build.py's
own `build_package(pkg, artifact, pkg_dir, quick=True)` (imported, not copied), with the quick
cap raised to MAX_PER_PACKAGE (build.py's every-k-th subsampling; its constant is monkeypatched
here, not edited).

Packages: SELECTION below, a subset of research/training/build_pairs.py's pinned PACKAGES (only
packages of ../shared/training-packages.md; same versions, same sha256 in
research/training/packages.lock.json, same download cache; Rust crates come from the local cargo
registry cache, cargo is never run). 4 per language, at least one validation package per
language, small-to-medium corpora (the engine embeds ~75 chunks/s and makes ~1 chunk per 25
lines). `--survey` prints every candidate's lines/queries/split (that is how SELECTION was made).
Go packages: the corpus root is the module directory inside the Debian package (as the
benchmark's pflag/go-cmp), found by descending usr/share/gocode/src while it has one child.
Never a package of benches/retrieval (checked against build.py's PACKAGES and its lock file).

Decontamination (as build_pairs.py): a candidate whose normalised query (build.py's norm) equals
a benchmark query (build_pairs.benchmark_queries()) is dropped BEFORE blanking/subsampling, so
its doc comment stays in the corpus like any other unused comment. Files under extern/ and
*.min.* files (build_pairs.py's extra rule) give no queries.

Split: the `split` field of each query ("train" / "validation") is train_adapter.py's
split_packages(pairs.manifest.json, 0.2, seed 16), the split every learned part here uses.

Output (not in the repo): ${RAGGREP_HOME:-~/.cache/raggrep}/training/fusion/retrieval/
    packages/<name>-<version>/corpus/...   blanked source tree (build.py's build_package)
    queries.jsonl                          build.py's rows + "split"
    manifest.json                          packages, versions, sha256, files, lines, queries, split
    .stamp                                 fingerprint of inputs; a rerun with nothing changed is instant
The directory is replaced atomically (staging dir + rename), as build.py does.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "benches", "retrieval"))
sys.path.insert(0, HERE)
import build as B  # noqa: E402  (benches/retrieval/build.py)
import build_pairs as BP  # noqa: E402  (pinned training packages, cached-crate fetcher, decontamination)

SCHEMA_VERSION = 1
MAX_PER_PACKAGE = 150
VAL_FRAC, SEED = 0.2, 16  # train_adapter.py's defaults

# Chosen with --survey: per language 4 packages with <= ~55k indexable lines each, including at
# least one validation package of the seed-16 split, preferring more queries per line.
# Names refer to build_pairs.PACKAGES.
SELECTION = [
    # Python
    "tornado", "babel", "python-dateutil", "arrow",
    # Rust
    "hashbrown", "itertools", "nom", "futures-util",
    # Go
    "pq", "echo", "dns", "cli",
    # JavaScript / TypeScript (mobx: TypeScript sources)
    "luxon", "ws", "mocha", "mobx",
]
# Corpus root inside the npm tarball, as the benchmark does for rxjs: these tarballs ship their
# sources next to built copies that repeat every doc comment, so with the whole tarball
# build.py's leak rule drops every query (luxon: build/, mobx: dist/; 0 queries in --survey), and
# mocha's top-level mocha.js is a 670 kB browser bundle with its dependencies inlined (bundled
# code is off limits; raggrep's walk would index it, it is not under dist/).
ROOTS = {"luxon": "src", "mobx": "src", "mocha": "lib"}

# Packages of the allowed list at versions no learned part has seen, selectable as NAME@VERSION
# with --out, for measuring only: their rows are split "heldout" (no fit reads that split). The
# allowed npm list has little TypeScript as written; these two ship theirs under src/ (zod 4 is a
# rewrite of the 3.23.8 that build_pairs pins as compiled JavaScript; redux is not in
# build_pairs at all).
HELD_OUT = [
    BP.P("zod", "4.6.7", "typescript", "npm"),
    BP.P("redux", "5.0.1", "typescript", "npm"),
]

# raggrep's walk (server/src/walk.rs): built-in excludes, hidden files, 1 MiB limit, binary.
WALK_EXCLUDED_DIRS = {".git", ".hg", ".svn", ".raggrep", "node_modules", "target", "vendor", "dist",
                      "build", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache",
                      ".pytest_cache", ".next"}
WALK_EXCLUDED_SUFFIXES = (".lock", ".min.js", ".min.css", ".map", ".pyc", ".class", ".o", ".so",
                          ".a", ".dylib", ".dll", ".exe", ".wasm")
WALK_EXCLUDED_FILES = {"package-lock.json", "pnpm-lock.yaml", "npm-shrinkwrap.json", "go.sum"}
CODE_EXTS = (".py", ".pyi", ".rs", ".go", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")


def out_dir() -> str:
    return os.path.join(BP.training_dir(), "fusion", "retrieval")


def split_packages_fn():
    """train_adapter.py's split_packages, taken from its source (that module needs numpy/onnx)."""
    path = os.path.join(HERE, "train_adapter.py")
    with open(path) as fh:
        tree = ast.parse(fh.read(), path)
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "split_packages")
    ns = {"random": random}
    exec(compile(ast.Module(body=[node], type_ignores=[]), path, "exec"), ns)
    return ns["split_packages"]


def package_split() -> dict[str, str]:
    path = os.path.join(BP.training_dir(), "pairs.manifest.json")
    if not os.path.exists(path):
        B.die(f"{path} missing: run research/training/build_pairs.sh first (the split is defined on it)")
    with open(path) as fh:
        manifest = json.load(fh)
    train, val = split_packages_fn()(manifest, VAL_FRAC, SEED)
    return {**{p: "train" for p in train}, **{p: "validation" for p in val}}


def indexable_lines(root: str) -> tuple[int, int]:
    """(lines raggrep would index, lines of code files among them): an approximation of walk.rs."""
    total = code = 0
    for dp, dns, fns in os.walk(root):
        dns[:] = [d for d in dns if d not in WALK_EXCLUDED_DIRS and not d.startswith(".")]
        for n in fns:
            nl = n.lower()
            if n.startswith(".") or nl.endswith(WALK_EXCLUDED_SUFFIXES) or n in WALK_EXCLUDED_FILES:
                continue
            fp = os.path.join(dp, n)
            if os.path.islink(fp) or not os.path.isfile(fp) or os.path.getsize(fp) > 1 << 20:
                continue
            with open(fp, "rb") as fh:
                data = fh.read()
            if b"\0" in data:
                continue
            text = data.decode("utf-8", errors="replace")
            if text.count("\ufffd") * 10 > max(len(text), 1):
                continue
            k = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
            total += k
            if nl.endswith(CODE_EXTS):
                code += k
    return total, code


def with_root(pkg, artifact: str, work: str):
    """Go debs: the Pkg with root = the module directory (single-child chain under GO_SRC)."""
    if pkg.source != "debian":
        return pkg
    probe = os.path.join(work, "probe")
    B.unpack(dataclasses.replace(pkg, root=BP.GO_SRC), artifact, probe)
    root = os.path.relpath(BP.descend(probe), probe)
    shutil.rmtree(probe)
    return dataclasses.replace(pkg, root=BP.GO_SRC if root == "." else f"{BP.GO_SRC}/{root}")


def benchmark_ids() -> set[str]:
    ids = {p.id for p in B.PACKAGES} | {p.name for p in B.PACKAGES}
    with open(B.LOCK_PATH) as fh:
        for pid in json.load(fh).get("packages", {}):
            ids.add(pid)
            ids.add(pid.rsplit("-", 1)[0])
    return ids


class Decontaminate:
    """Wraps build.py's leak_filter so benchmark queries are dropped before blanking/subsampling,
    and its source_language so extern/ and *.min.* files (build_pairs' rule) give no queries."""

    def __init__(self, bench_q: set[str]):
        self.bench_q = bench_q
        self.dropped = 0
        self._leak = B.leak_filter
        self._lang = B.source_language
        B.leak_filter = self.leak_filter
        B.source_language = self.source_language

    def leak_filter(self, selected, originals, corpus, dropped):
        keep = [f for f in selected if B.norm(f.query) not in self.bench_q]
        self.dropped += len(selected) - len(keep)
        return self._leak(keep, originals, corpus, dropped)

    def source_language(self, rel: str):
        return None if BP.excluded_extra(rel) else self._lang(rel)


def selected_packages(names: list[str]):
    by_name = {p.name: p for p in BP.PACKAGES} | {f"{p.name}@{p.version}": p for p in HELD_OUT}
    missing = [n for n in names if n not in by_name]
    if missing:
        B.die(f"not in build_pairs.PACKAGES nor HELD_OUT (NAME@VERSION): {missing}")
    bench = benchmark_ids()
    pkgs = [dataclasses.replace(by_name[n], root=ROOTS.get(n, by_name[n].root)) for n in names]
    clash = [p.id for p in pkgs if p.id in bench or p.name in bench]
    if clash:
        B.die(f"benchmark package(s) selected: {clash}")
    return pkgs


def typescript_as_written(root: str) -> dict[str, int]:
    """An npm package as its authors wrote it: compiled files replaced by the TypeScript their
    source maps carry (build_pairs.recover_typescript), and the build's other outputs of those
    sources removed. Without that, every query would be dropped by build.py's leak rule, since
    each doc comment is repeated in the declaration file (`X.d.ts`) and in any second build of
    the same source (typeorm ships each file twice, at the root and under browser/); a
    second build is recognised by its map's source text, not by a directory name, and the copy
    with the shorter path is kept."""
    first: dict[str, str] = {}
    removed = 0
    for rel in sorted(B.list_files(root), key=lambda r: (r.count("/"), r)):
        if not rel.endswith(".js.map"):
            continue
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as fh:
                contents = json.load(fh).get("sourcesContent") or []
        except (OSError, ValueError):
            continue
        if len(contents) != 1 or not isinstance(contents[0], str):
            continue
        digest = hashlib.sha256(contents[0].encode()).hexdigest()
        if digest not in first:
            first[digest] = rel
            continue
        stem = rel[:-len(".js.map")]
        for ext in (".js.map", ".js", ".d.ts"):
            if os.path.exists(os.path.join(root, stem + ext)):
                os.remove(os.path.join(root, stem + ext))
                removed += 1
    recovered = BP.recover_typescript(root)
    declarations = 0
    for rel in B.list_files(root):
        if rel.endswith(".d.ts") and os.path.exists(os.path.join(root, rel[:-len(".d.ts")] + ".ts")):
            os.remove(os.path.join(root, rel))
            declarations += 1
    return {"recovered": recovered, "second_build_files": removed, "declarations": declarations}


def build_one(pkg, path: str, pkg_dir: str, deco: Decontaminate,
              from_source_maps: bool = False) -> tuple[list[dict], dict]:
    before = deco.dropped
    unpack, recovery = B.unpack, {}
    if from_source_maps and pkg.source == "npm":
        def unpack_as_written(p, artifact, dest):
            unpack(p, artifact, dest)
            recovery.update(typescript_as_written(dest))
        B.unpack = unpack_as_written
    try:
        rows, info = B.build_package(pkg, path, pkg_dir, quick=True)
    finally:
        B.unpack = unpack
    if recovery:
        info["typescript_from_source_maps"] = recovery
    info["dropped"]["benchmark-query"] = deco.dropped - before
    info["lines"], info["code_lines"] = indexable_lines(os.path.join(pkg_dir, "corpus"))
    return rows, info


def survey(downloads: str, lock: dict, split: dict, deco: Decontaminate, base: str) -> None:
    """Builds every build_pairs package into a scratch dir and prints lines / queries / split."""
    bench = benchmark_ids()
    B.log(f"{'package':28s} {'lang':11s} {'split':10s} {'lines':>8s} {'code':>8s} {'queries':>7s}")
    with tempfile.TemporaryDirectory(prefix=".survey-", dir=base) as work:
        for p in BP.PACKAGES:
            if p.id in bench or p.name in bench or ":" in p.version:
                continue
            try:
                path, _ = B.ensure_artifact(p, downloads, lock)
                pkg = with_root(p, path, work)
                rows, info = build_one(pkg, path, os.path.join(work, p.id), deco)
            except (SystemExit, BP.Skip) as e:
                B.log(f"  SKIP {p.id}: {e}")
                continue
            shutil.rmtree(os.path.join(work, p.id), ignore_errors=True)
            langs = sorted({r["language"] for r in rows})
            B.log(f"{p.id:28s} {p.language:11s} {split.get(p.id, '-'):10s} {info['lines']:8d} "
                  f"{info['code_lines']:8d} {len(rows):7d} {','.join(langs)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--force", action="store_true", help="rebuild even if up to date")
    ap.add_argument("--survey", action="store_true",
                    help="print lines/queries/split of every training package (writes nothing)")
    ap.add_argument("--packages", default="",
                    help="comma-separated build_pairs package names instead of SELECTION (with --out)")
    ap.add_argument("--root", action="append", default=[], metavar="NAME=DIR",
                    help="corpus root inside a package's artifact, as ROOTS")
    ap.add_argument("--typescript-from-source-maps", action="store_true",
                    help="npm packages as written: TypeScript from their source maps, other build outputs "
                         "removed (with --out; typeorm)")
    ap.add_argument("--out", help="output directory (default: the fusion dataset's)")
    args = ap.parse_args()
    t0 = time.time()
    B.QUICK_MAX_PER_PACKAGE = MAX_PER_PACKAGE  # build.py's every-k-th subsampling, cap 150
    if bool(args.packages or args.root or args.typescript_from_source_maps) != bool(args.out):
        B.die("--packages/--root/--typescript-from-source-maps and --out go together: "
              "another selection must not replace the fusion dataset")
    selection = [n.strip() for n in args.packages.split(",") if n.strip()] or SELECTION
    for spec in args.root:
        name, sep, root = spec.partition("=")
        if not sep or not name or not root:
            B.die(f"--root {spec!r}: expected NAME=DIR")
        if name not in selection:
            B.die(f"--root {spec!r}: {name} is not among the selected packages")
        ROOTS[name] = root
    out = os.path.abspath(args.out) if args.out else out_dir()
    base = os.path.dirname(out)
    downloads = os.path.join(BP.training_dir(), "downloads")
    os.makedirs(base, exist_ok=True)
    with open(BP.LOCK_PATH) as fh:
        lock = json.load(fh)
    before_lock = json.dumps(lock, sort_keys=True)
    split = package_split()
    bench_q = BP.benchmark_queries()
    deco = Decontaminate(bench_q)
    if args.survey:
        survey(downloads, lock, split, deco, base)
        return

    pkgs = selected_packages(selection)
    artifacts = {p.id: B.ensure_artifact(p, downloads, lock) for p in pkgs}
    if json.dumps(lock, sort_keys=True) != before_lock:
        B.write_atomic(BP.LOCK_PATH, json.dumps(lock, indent=2, sort_keys=True) + "\n")
    scripts = {}
    for f in (os.path.abspath(__file__), os.path.join(HERE, "build_pairs.py"),
              os.path.join(HERE, "train_adapter.py"), os.path.join(REPO, "benches", "retrieval", "build.py")):
        scripts[os.path.basename(f)] = BP.B.sha256_file(f)
    fingerprint = hashlib.sha256(json.dumps({
        "schema": SCHEMA_VERSION, "scripts": scripts, "max": MAX_PER_PACKAGE, "roots": ROOTS,
        **({"typescript_from_source_maps": True} if args.typescript_from_source_maps else {}),
        "tools": B.tool_versions(), "artifacts": {k: v[1] for k, v in artifacts.items()},
        "split": {p.id: split.get(p.id) for p in pkgs},
        "bench_queries": hashlib.sha256("\n".join(sorted(bench_q)).encode()).hexdigest(),
    }, sort_keys=True).encode()).hexdigest()
    stamp_path = os.path.join(out, ".stamp")
    if not args.force and os.path.exists(stamp_path) and os.path.exists(os.path.join(out, "queries.jsonl")):
        with open(stamp_path) as fh:
            if fh.read().strip() == fingerprint:
                with open(os.path.join(out, "manifest.json")) as mf:
                    summarize(json.load(mf))
                B.log(f"up to date: {out} ({time.time() - t0:.1f}s)")
                return

    staging = tempfile.mkdtemp(dir=base, prefix=f".{os.path.basename(out)}.tmp-")
    try:
        all_rows, entries = [], []
        for p in pkgs:
            tp = time.time()
            path, digest = artifacts[p.id]
            if p.id in {h.id for h in HELD_OUT}:
                split[p.id] = "heldout"
            elif p.id not in split:
                B.die(f"{p.id} is in neither half of the seed-{SEED} split (no pairs?)")
            pkg = with_root(p, path, staging)
            rows, info = build_one(pkg, path, os.path.join(staging, "packages", p.id), deco,
                                   args.typescript_from_source_maps)
            for r in rows:
                assert B.norm(r["query"]) not in bench_q
                r["split"] = split[p.id]
            all_rows.extend(rows)
            by_lang: dict[str, int] = {}
            for r in rows:
                by_lang[r["language"]] = by_lang.get(r["language"], 0) + 1
            entries.append({"name": p.name, "version": p.version, "language": p.language,
                            "source": p.source, "deb": p.deb or None, "root": pkg.root or None,
                            "artifact": os.path.basename(path), "sha256": digest,
                            "files": info["files"], "lines": info["lines"],
                            "code_lines": info["code_lines"], "queries": len(rows),
                            "queries_by_language": by_lang, "split": split[p.id],
                            "dropped": info["dropped"],
                            **({"typescript_from_source_maps": info["typescript_from_source_maps"]}
                               if "typescript_from_source_maps" in info else {})})
            d = {k: v for k, v in info["dropped"].items() if v}
            B.log(f"  {p.id} [{split[p.id]}]: {len(rows)} queries, {info['lines']} lines; "
                  f"dropped {d} ({time.time() - tp:.1f}s)")
        count = lambda key: {k: sum(1 for r in all_rows if r[key] == k)  # noqa: E731
                             for k in sorted({r[key] for r in all_rows})}
        manifest = {"packages": entries, "total_queries": len(all_rows),
                    "queries_by_language": count("language"), "queries_by_split": count("split"),
                    "total_lines": sum(e["lines"] for e in entries),
                    "total_code_lines": sum(e["code_lines"] for e in entries),
                    "split": {"seed": SEED, "val_frac": VAL_FRAC,
                              "train": [e["name"] + "-" + e["version"] for e in entries if e["split"] == "train"],
                              "validation": [e["name"] + "-" + e["version"] for e in entries
                                             if e["split"] == "validation"],
                              "defined_by": "research/training/train_adapter.py split_packages "
                                            "over pairs.manifest.json"},
                    "max_per_package": MAX_PER_PACKAGE,
                    "built_by": "research/training/build_fusion_data.py (benches/retrieval/build.py's "
                                "build_package)", "mode": "quick-150"}
        with open(os.path.join(staging, "queries.jsonl"), "w") as fh:
            for r in all_rows:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        with open(os.path.join(staging, "manifest.json"), "w") as fh:
            json.dump(manifest, fh, indent=2)
            fh.write("\n")
        with open(os.path.join(staging, ".stamp"), "w") as fh:
            fh.write(fingerprint + "\n")
        os.chmod(staging, 0o755)
        old = None
        if os.path.exists(out):
            old = staging + ".old"
            os.rename(out, old)
        os.rename(staging, out)
        if old:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    summarize(manifest)
    B.log(f"wrote {out} ({time.time() - t0:.1f}s)")


def summarize(m: dict) -> None:
    B.log(f"{'package':28s} {'lang':11s} {'split':10s} {'files':>6s} {'lines':>8s} {'queries':>7s}")
    for p in m["packages"]:
        B.log(f"{p['name'] + '-' + p['version']:28s} {p['language']:11s} {p['split']:10s} "
              f"{p['files']:6d} {p['lines']:8d} {p['queries']:7d}")
    B.log("by language: " + ", ".join(f"{k}={v}" for k, v in m["queries_by_language"].items()))
    B.log("by split: " + ", ".join(f"{k}={v}" for k, v in m["queries_by_split"].items()))
    B.log(f"total: {m['total_queries']} queries, {m['total_lines']} indexable lines "
          f"(~{m['total_lines'] // 25} chunks), {m['total_code_lines']} code lines")


if __name__ == "__main__":
    main()
