#!/usr/bin/env python3
"""Build (query, code) training pairs for raggrep's learned ranking parts (issue 16).

Usage:  research/training/build_pairs.sh [--max-per-package N] [--only NAME,...] [--skip NAME,...] [--out DIR]
                                       [--typescript-from-source-maps]
        (runs this file in the benchmark's tree-sitter venv, created by benches/retrieval/build.sh)

Sources: ONLY packages of ../shared/training-packages.md, at the versions pinned in PACKAGES
below, fetched with the ordinary clients (pip download / npm pack / apt-get download). Rust
crates are taken from the local cargo registry cache (~/.cargo/registry/cache); build_pairs.sh
first fetches the pinned crates that are missing there (`cargo fetch` in a throwaway project,
listed by --missing-crates), because a skipped crate changes the package list and so the
seeded train/validation split of every learned part. This script itself never runs cargo.
The sha256 of every artifact is recorded in packages.lock.json next to this file on first
download and verified on every later run.

Extraction REUSES benches/retrieval/build.py (imported, not copied): same file filters (tests,
examples, vendor/_vendor/third_party/node_modules/dist, generated and minified files), same
function + doc comment extraction, same query text (first sentence of the doc comment) and the
same rejection rules (short, boilerplate, name-echo). On top of build.py: files under an
`extern/` directory or named *.min.js are skipped, and a query (normalised) or code text that
was already taken is skipped (keep the first), so no two pairs share a query or a code text.
Decontamination: a pair whose normalised query equals a query of the retrieval benchmark (its
queries.jsonl; built here when missing) is dropped. These are not copies of benchmark code but
stock API sentences shared across libraries ("Returns the number of elements in the map": 18 of
17,816 pairs, from hashbrown/indexmap/tantivy/protobuf against serde_json/go-cmp); dropping them
only removes training signal, so it can only make benchmark numbers more pessimistic.
The code is the function with its doc comment blanked exactly as the benchmark blanks it.

Output (not in the repo): ${RAGGREP_HOME:-~/.cache/raggrep}/training/
    pairs.jsonl            {"package", "language", "path", "symbol", "query", "code"} per line
    pairs.manifest.json    packages (version, artifact, sha256, counts) and skipped packages
    downloads/<source>/    cached artifacts
"""

from __future__ import annotations

import argparse
import glob
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
import build as B  # noqa: E402  (benches/retrieval/build.py)

LOCK_PATH = os.path.join(HERE, "packages.lock.json")
P = B.Pkg
GO_SRC = "usr/share/gocode/src"

# Pinned versions. Chosen for: source code with doc comments in the package itself, metadata
# that pip can prepare without compiling anything, and a spread of domains per language.
PACKAGES = [
    # Python (PyPI sdists)
    P("django", "5.1.4", "python", "pypi"),
    P("sqlalchemy", "2.0.36", "python", "pypi"),
    P("networkx", "3.4.2", "python", "pypi"),
    P("tornado", "6.4.2", "python", "pypi"),
    P("paramiko", "3.5.0", "python", "pypi"),
    P("marshmallow", "3.23.1", "python", "pypi"),
    P("arrow", "1.3.0", "python", "pypi"),
    P("python-dateutil", "2.9.0.post0", "python", "pypi"),
    P("babel", "2.16.0", "python", "pypi"),
    P("celery", "5.4.0", "python", "pypi"),
    P("scrapy", "2.12.0", "python", "pypi"),
    P("twisted", "24.11.0", "python", "pypi"),
    P("docutils", "0.21.2", "python", "pypi"),
    # JavaScript / TypeScript (npm tarballs)
    P("lodash", "4.17.21", "javascript", "npm"),
    P("moment", "2.30.1", "javascript", "npm"),
    P("luxon", "3.5.0", "javascript", "npm"),
    P("underscore", "1.13.7", "javascript", "npm"),
    P("async", "3.2.6", "javascript", "npm"),
    P("bluebird", "3.7.2", "javascript", "npm"),
    P("handlebars", "4.7.8", "javascript", "npm"),
    P("date-fns", "4.1.0", "javascript", "npm"),
    P("ws", "8.18.0", "javascript", "npm"),
    P("superagent", "10.1.1", "javascript", "npm"),
    P("mocha", "10.8.2", "javascript", "npm"),
    P("mobx", "6.13.5", "typescript", "npm"),
    P("immer", "10.1.1", "typescript", "npm"),
    P("ajv", "8.17.1", "typescript", "npm"),
    P("marked", "15.0.4", "typescript", "npm"),
    P("zod", "3.23.8", "typescript", "npm"),
    P("mongoose", "8.8.4", "javascript", "npm"),
    P("sequelize", "6.37.5", "javascript", "npm"),
    P("typeorm", "0.3.20", "javascript", "npm"),
    P("chai", "4.5.0", "javascript", "npm"),
    P("socket.io", "4.8.1", "javascript", "npm"),
    P("fastify", "5.1.0", "javascript", "npm"),
    P("preact", "10.25.1", "javascript", "npm"),
    P("yup", "1.4.0", "typescript", "npm"),
    P("inquirer", "9.3.7", "javascript", "npm"),
    # Go (Debian golang-*-dev)
    P("testify", "1.8.1-1", "go", "debian", deb="golang-github-stretchr-testify-dev", root=GO_SRC),
    P("logrus", "1.9.0-1", "go", "debian", deb="golang-github-sirupsen-logrus-dev", root=GO_SRC),
    P("mux", "1.8.0-1", "go", "debian", deb="golang-github-gorilla-mux-dev", root=GO_SRC),
    P("uuid", "1.3.0-1", "go", "debian", deb="golang-github-google-uuid-dev", root=GO_SRC),
    P("errors", "0.9.1-2", "go", "debian", deb="golang-github-pkg-errors-dev", root=GO_SRC),
    P("cli", "1.22.9-2", "go", "debian", deb="golang-github-urfave-cli-dev", root=GO_SRC),
    P("pq", "1.10.7-2", "go", "debian", deb="golang-github-lib-pq-dev", root=GO_SRC),
    P("echo", "4.2.1-3", "go", "debian", deb="golang-github-labstack-echo-dev", root=GO_SRC),
    P("fsnotify", "1.6.0-2", "go", "debian", deb="golang-github-fsnotify-fsnotify-dev", root=GO_SRC),
    P("dns", "1.1.50-2", "go", "debian", deb="golang-github-miekg-dns-dev", root=GO_SRC),
    P("mysql", "1.5.0-2", "go", "debian", deb="golang-github-go-sql-driver-mysql-dev", root=GO_SRC),
    P("x-text", "0.7.0-1", "go", "debian", deb="golang-golang-x-text-dev", root=GO_SRC),
    P("x-net", "1:0.7.0+dfsg-1", "go", "debian", deb="golang-golang-x-net-dev", root=GO_SRC),
    P("x-crypto", "1:0.4.0-1", "go", "debian", deb="golang-golang-x-crypto-dev", root=GO_SRC),
    P("protobuf", "1.28.1-3", "go", "debian", deb="golang-google-protobuf-dev", root=GO_SRC),
    # Rust (crates, from the local cargo registry cache; build_pairs.sh fetches missing ones)
    P("syn", "2.0.117", "rust", "crates"),
    P("nom", "7.1.3", "rust", "crates"),
    P("rayon", "1.12.0", "rust", "crates"),
    P("rayon-core", "1.13.0", "rust", "crates"),
    P("crossbeam-channel", "0.5.17", "rust", "crates"),
    P("crossbeam-utils", "0.8.23", "rust", "crates"),
    P("itertools", "0.14.0", "rust", "crates"),
    P("time", "0.3.55", "rust", "crates"),
    P("rand", "0.9.5", "rust", "crates"),
    P("futures-util", "0.3.34", "rust", "crates"),
    P("indexmap", "2.14.2", "rust", "crates"),
    P("hashbrown", "0.15.5", "rust", "crates"),
    P("ndarray", "0.17.2", "rust", "crates"),
    P("tantivy", "0.27.0", "rust", "crates"),
    P("semver", "1.0.28", "rust", "crates"),
]
# The second batch (added 2026-11-25): the rest of training-packages.md that the clients can fetch.
# It comes after the first, so the first batch's pairs (kept-first dedup, seeded caps) and its
# train/validation split (train_adapter.split_packages) stay exactly what the shipped parts were
# trained and validated on; every second-batch package is a training package.
# Not fetchable as a source distribution here: pandas, scikit-learn and matplotlib (pip has
# to configure a compiler build just to read their metadata).
SECOND_BATCH = [
    P("sympy", "1.14.0", "python", "pypi"),
    P("aiohttp", "3.14.5", "python", "pypi"),
    P("sphinx", "9.0.4", "python", "pypi"),
    P("pygments", "2.21.0", "python", "pypi"),
    P("beautifulsoup4", "4.15.0", "python", "pypi"),
    P("pyyaml", "6.0.4", "python", "pypi"),
    P("dask", "2026.8.0", "python", "pypi"),
    P("bokeh", "3.9.2", "python", "pypi"),
    P("astropy", "8.0.2", "python", "pypi"),
    P("client-golang", "1.14.0-3", "go", "debian", deb="golang-github-prometheus-client-golang-dev",
      root=GO_SRC),
    P("go-sqlite3", "1.14.16~ds1-1", "go", "debian", deb="golang-github-mattn-go-sqlite3-dev", root=GO_SRC),
    P("compress", "1.15.12+ds1-3", "go", "debian", deb="golang-github-klauspost-compress-dev", root=GO_SRC),
    P("quote", "1.0.47", "rust", "crates"),
    P("proc-macro2", "1.0.107", "rust", "crates"),
    P("chrono", "0.4.45", "rust", "crates"),
    P("hyper", "1.12.0", "rust", "crates"),
    P("reqwest", "0.13.5", "rust", "crates"),
    P("h2", "0.4.20", "rust", "crates"),
    P("http", "1.5.0", "rust", "crates"),
    P("url", "2.5.8", "rust", "crates"),
    P("anyhow", "1.0.104", "rust", "crates"),
    P("thiserror", "2.0.21", "rust", "crates"),
    P("petgraph", "0.8.3", "rust", "crates"),
    P("image", "0.25.10", "rust", "crates"),
    P("nalgebra", "0.35.0", "rust", "crates"),
    P("sqlx-core", "0.9.0", "rust", "crates"),
    P("diesel", "2.3.14", "rust", "crates"),
    P("actix-web", "4.18.1", "rust", "crates"),
    P("rocket", "0.5.2", "rust", "crates"),
    P("warp", "0.4.3", "rust", "crates"),
    P("tonic", "0.14.9", "rust", "crates"),
    P("prost", "0.14.6", "rust", "crates"),
    P("toml_edit", "0.25.20+spec-1.1.0", "rust", "crates"),
    P("rustls", "0.23.46", "rust", "crates"),
    P("winit", "0.30.13", "rust", "crates"),
]
FIRST_BATCH_IDS = {p.id for p in PACKAGES}
PACKAGES = PACKAGES + SECOND_BATCH
EXTRA_EXCLUDED_DIRS = {"extern"}  # the rules' list; build.py already skips the others
MAX_CODE_CHARS = 4000  # the model reads 256 tokens (~1,000 chars); keep some slack
SEED = 16


class Skip(Exception):
    pass


def training_dir() -> str:
    home = os.environ.get("RAGGREP_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "raggrep")
    return os.path.join(home, "training")


def crate_in_cache(pkg) -> list[str]:
    pattern = os.path.join(B.cargo_home(), "registry", "cache", "*", f"{pkg.name}-{pkg.version}.crate")
    return sorted(glob.glob(pattern))


def cached_crate(pkg, tmp: str) -> str:
    """The crate from the cargo registry cache, or Skip: cargo is never run here."""
    found = crate_in_cache(pkg)
    if not found:
        raise Skip(f"{pkg.name}-{pkg.version}.crate is not in the local cargo registry cache "
                   "(this script does not run cargo)")
    dst = os.path.join(tmp, os.path.basename(found[0]))
    shutil.copyfile(found[0], dst)
    return dst


B.FETCHERS["crates"] = cached_crate


def descend(root: str) -> str:
    """Go debs: from usr/share/gocode/src down to the module directory (single-child chain)."""
    while True:
        entries = os.listdir(root)
        if len(entries) == 1 and os.path.isdir(os.path.join(root, entries[0])):
            root = os.path.join(root, entries[0])
        else:
            return root


def excluded_extra(rel: str) -> bool:
    parts = rel.split("/")
    return any(p.lower() in EXTRA_EXCLUDED_DIRS for p in parts[:-1]) or ".min." in parts[-1].lower()


def symbol_path(f) -> str:
    """Like raggrep's Chunk::symbol_path: container + separator + name (:: for Rust)."""
    if not f.owner:
        return f.name
    return f"{f.owner}{'::' if f.language == 'rust' else '.'}{f.name}"


def recover_typescript(root: str) -> int:
    """Puts back the TypeScript a compiled file came from, when its source map carries it.

    Some allowed npm packages are written in TypeScript but ship per-file compiled JavaScript,
    each file with a map whose `sourcesContent` is the package's own source (typeorm: 997
    files, each shipped twice). A map with exactly one .ts/.tsx source is one compiled file,
    not a bundle: the source replaces the compiled file, beside it with its own extension.
    Files a package ships as TypeScript already, and maps under excluded directories (dist/,
    tests), are left alone.
    """
    recovered = 0
    for rel in B.list_files(root):
        if not rel.endswith((".js.map", ".mjs.map", ".cjs.map")):
            continue
        compiled = rel[:-len(".map")]
        if B.source_language(compiled) is None:
            continue
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as fh:
                source_map = json.load(fh)
        except (OSError, ValueError):
            continue
        sources, contents = source_map.get("sources") or [], source_map.get("sourcesContent") or []
        if len(sources) != 1 or len(contents) != 1 or not isinstance(contents[0], str) or not contents[0]:
            continue
        ext = os.path.splitext(sources[0])[1]
        if ext not in (".ts", ".tsx") or sources[0].endswith(".d.ts"):
            continue
        target = os.path.join(root, os.path.splitext(compiled)[0] + ext)
        if os.path.exists(target):
            continue
        with open(target, "w", encoding="utf-8") as fh:
            fh.write(contents[0])
        compiled_path = os.path.join(root, compiled)
        if os.path.exists(compiled_path):
            os.remove(compiled_path)
        recovered += 1
    return recovered


def extract_pairs(pkg, artifact: str, work: str, from_source_maps: bool = False) -> tuple[list[dict], dict]:
    corpus = os.path.join(work, "corpus")
    B.unpack(pkg, artifact, corpus)
    root = descend(corpus) if pkg.source == "debian" else corpus
    stats = {k: 0 for k in ("source_files", "generated_files", "parse_errors", "test_functions",
                            "functions_with_doc", "doc_shares_line")}
    if from_source_maps and pkg.source == "npm":
        stats["recovered_typescript_files"] = recover_typescript(root)
    funcs, originals = B.extract(root, stats)
    dropped = {k: 0 for k in ("extern-or-min", "short", "boilerplate", "name-echo")}
    rows = []
    for f in funcs:
        if excluded_extra(f.path):
            dropped["extern-or-min"] += 1
            continue
        f.query = B.make_query(f)
        r = B.reject_reason(f)
        if r:
            dropped[r] += 1
            continue
        lines = B.split_lines(B.blanked(originals[f.path], [f]))
        code = b"\n".join(lines[f.start_line - 1:f.end_line]).decode("utf-8", errors="replace")
        rows.append({"package": pkg.id, "language": f.language, "path": f.path,
                     "symbol": symbol_path(f), "query": f.query, "code": code[:MAX_CODE_CHARS]})
    return rows, {"stats": stats, "dropped": dropped}


def benchmark_queries() -> set[str]:
    path = os.path.join(B.bench_dir(), "retrieval", "queries.jsonl")
    if not os.path.exists(path):
        B.log("benchmark queries missing (needed for decontamination): running benches/retrieval/build.sh")
        import subprocess
        subprocess.run(["bash", os.path.join(REPO, "benches", "retrieval", "build.sh")], check=True)
    with open(path) as fh:
        return {B.norm(json.loads(line)["query"]) for line in fh}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-per-package", type=int, default=1500,
                    help="keep at most N pairs per package (seeded sample; default 1500)")
    ap.add_argument("--only", help="comma-separated package names (default: all)")
    ap.add_argument("--skip", default="", help="comma-separated package names to leave out")
    ap.add_argument("--first-batch", action="store_true",
                    help="only the first batch: the pairs every part but the query model was trained on")
    ap.add_argument("--typescript-from-source-maps", action="store_true",
                    help="npm packages: extract from the TypeScript their per-file source maps "
                         "carry instead of the compiled JavaScript (no shipped model used this yet)")
    ap.add_argument("--out", help="output directory (default: the training directory; downloads "
                                  "are still read from and cached there)")
    ap.add_argument("--missing-crates", action="store_true",
                    help="print 'name version' of each pinned crate not in the cargo cache, and exit")
    args = ap.parse_args()
    if args.missing_crates:
        for p in PACKAGES:
            if p.source == "crates" and not crate_in_cache(p):
                print(p.name, p.version)
        return
    t0 = time.time()
    out = args.out or training_dir()
    downloads = os.path.join(training_dir(), "downloads")
    os.makedirs(out, exist_ok=True)
    lock = {"comment": "sha256 of every training artifact; written by build_pairs.py on first "
                       "download, verified on every run", "packages": {}}
    if os.path.exists(LOCK_PATH):
        with open(LOCK_PATH) as fh:
            lock = json.load(fh)
    only = [n for n in (args.only or "").split(",") if n]
    skip = [n for n in args.skip.split(",") if n]
    pkgs = [p for p in PACKAGES if (not only or p.name in only)
            and p.name not in skip
            and (not args.first_batch or p.id in FIRST_BATCH_IDS)]
    bench_q = benchmark_queries()
    seen_q, seen_code = set(), set()
    all_rows, entries, skipped = [], [], []
    for pkg in pkgs:
        tp = time.time()
        try:
            try:
                path, digest = B.ensure_artifact(pkg, downloads, lock)
            except SystemExit:  # build.py's die(): already printed the one-line reason
                raise Skip("download failed (see the line above)")
            with tempfile.TemporaryDirectory(prefix="raggrep-train-", dir=out) as work:
                try:
                    rows, info = extract_pairs(pkg, path, os.path.join(work, "pkg"),
                                               args.typescript_from_source_maps)
                except SystemExit:
                    raise Skip("unpacking failed (see the line above)")
        except Skip as e:
            B.log(f"  SKIP {pkg.id}: {e}")
            skipped.append({"package": pkg.id, "reason": str(e)})
            continue
        extracted = len(rows)
        kept, dup, contaminated = [], 0, 0
        for r in rows:
            qk = B.norm(r["query"])
            if qk in bench_q:
                contaminated += 1
                continue
            ck = hashlib.sha256(" ".join(r["code"].split()).encode()).hexdigest()
            if qk in seen_q or ck in seen_code:
                dup += 1
                continue
            seen_q.add(qk)
            seen_code.add(ck)
            kept.append(r)
        capped = 0
        if len(kept) > args.max_per_package:
            capped = len(kept) - args.max_per_package
            rng = random.Random(f"{SEED}:{pkg.id}")
            idx = sorted(rng.sample(range(len(kept)), args.max_per_package))
            kept = [kept[i] for i in idx]
        all_rows.extend(kept)
        info["dropped"]["duplicate"] = dup
        info["dropped"]["cap"] = capped
        info["dropped"]["benchmark-query"] = contaminated
        entries.append({"name": pkg.name, "version": pkg.version, "language": pkg.language,
                        "source": pkg.source, "deb": pkg.deb or None,
                        "batch": 1 if pkg.id in FIRST_BATCH_IDS else 2,
                        "artifact": os.path.basename(path), "sha256": digest,
                        "candidates": extracted, "pairs": len(kept), **info})
        d = {k: v for k, v in info["dropped"].items() if v}
        B.log(f"  {pkg.id}: {len(kept)} pairs ({info['stats']['functions_with_doc']} documented "
              f"functions in {info['stats']['source_files']} files; dropped {d}) "
              f"({time.time() - tp:.1f}s)")
    B.write_atomic(LOCK_PATH, json.dumps(lock, indent=2, sort_keys=True) + "\n")
    with open(os.path.join(out, "pairs.jsonl.tmp"), "w") as fh:
        for r in all_rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    os.replace(os.path.join(out, "pairs.jsonl.tmp"), os.path.join(out, "pairs.jsonl"))
    by_lang: dict[str, int] = {}
    for r in all_rows:
        by_lang[r["language"]] = by_lang.get(r["language"], 0) + 1
    manifest = {"built_by": "research/training/build_pairs.py", "seed": SEED,
                "typescript_from_source_maps": args.typescript_from_source_maps,
                "max_per_package": args.max_per_package, "total_pairs": len(all_rows),
                "pairs_by_language": by_lang, "packages": entries, "skipped": skipped,
                "left_out_on_request": skip}
    B.write_atomic(os.path.join(out, "pairs.manifest.json"), json.dumps(manifest, indent=2) + "\n")
    B.log(f"{'package':32s} {'lang':11s} {'pairs':>6s}")
    for e in entries:
        B.log(f"{e['name'] + '-' + e['version']:32s} {e['language']:11s} {e['pairs']:6d}")
    B.log("by language (of the pair's file): " + ", ".join(f"{k}={v}" for k, v in sorted(by_lang.items())))
    B.log(f"skipped: {len(skipped)} package(s); total pairs {len(all_rows)}; "
          f"wrote {out}/pairs.jsonl ({time.time() - t0:.0f}s)")


if __name__ == "__main__":
    main()
