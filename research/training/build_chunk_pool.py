#!/usr/bin/env python3
"""The rest of each training package as raggrep indexes it: negatives for the query tower.

Usage:  research/training/build_chunk_pool.sh [--max-per-package N] [--only a,b]
        (runs this file in the benchmark's tree-sitter venv, like build_pairs.sh)

Why: the towers were trained to find a documented function among the package's other documented
functions (pairs.jsonl). An index holds much more: undocumented functions, tests, classes and
impl blocks, module-level code, split pieces of long functions, README sections. At query time
those are what outranks the right function (on TUNE, 62 % of the chunks above a missed gold are
ordinary chunks of other files), but the training never showed the model one of them.

What: for every package of pairs.manifest.json (same pinned artifacts, same download cache), the
package is unpacked, every documented function's doc comment is blanked (build.py's `blanked`,
for all functions, not only the pairs': no chunk here carries a function's doc, as no pair's code
does, so a doc comment cannot become a sign of a wrong answer), and raggrep itself lists the files
its walk indexes (`raggrep files`) and chunks them (`raggrep chunk --json`): the engine's own
chunks and embedding text (`path symbol_path` + newline + code, chunk::embedding_text). A chunk
that overlaps a pair's function is left out (the pair's own text stands for it). At most
--max-per-package chunks are kept per package (a seeded sample).

Output: ~/.cache/raggrep/training/chunkpool.jsonl  {"package", "path", "start_line", "end_line",
        "kind", "text"} per chunk; chunkpool.manifest.json: per package the files, chunks, kept.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import build_pairs as BP  # noqa: E402  (pinned packages, unpacking, build.py as B)

B = BP.B
SEED = 16
MAX_TEXT_CHARS = 4000  # the model reads 256 tokens (~1,000 characters)


def raggrep_bin() -> str:
    path = os.environ.get("RAGGREP_BIN") or os.path.join(REPO, "target", "release", "raggrep")
    if not os.access(path, os.X_OK):
        B.die(f"{path} missing: cargo build --release (or set RAGGREP_BIN)")
    return path


def indexed_files(binary: str, root: str) -> list[str]:
    """The files raggrep's walk indexes under `root` (`raggrep files`: one path a line)."""
    out = subprocess.run([binary, "files", root], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if line.strip()]


def chunks_of(binary: str, root: str, rel: str) -> list[dict]:
    run = subprocess.run([binary, "chunk", "--json", rel], cwd=root, capture_output=True, text=True)
    if run.returncode != 0:  # binary or minified: the walk lists it, indexing skips it
        return []
    return [json.loads(line) for line in run.stdout.split("\n") if line.strip()]


def embedding_text(rel: str, chunk: dict) -> str:
    symbol = chunk.get("symbol_path")
    head = f"{rel} {symbol}" if symbol else rel
    return f"{head}\n{chunk['text']}"[:MAX_TEXT_CHARS]


def package_pool(pkg, artifact: str, work: str, pair_keys: set, binary: str) -> tuple[list[dict], dict]:
    corpus = os.path.join(work, "corpus")
    B.unpack(pkg, artifact, corpus)
    root = BP.descend(corpus) if pkg.source == "debian" else corpus
    stats = {k: 0 for k in ("source_files", "generated_files", "parse_errors", "test_functions",
                            "functions_with_doc", "doc_shares_line")}
    funcs, originals = B.extract(root, stats)
    # A pair's function wherever it occurs: some packages ship a second copy of their sources
    # (luxon's build/ next to src/), and the walk may index the copy the pair was not taken from.
    spans: dict[str, list[tuple[int, int]]] = {}
    by_file: dict[str, list] = {}
    for f in funcs:
        by_file.setdefault(f.path, []).append(f)
        f.query = B.make_query(f)
        if (BP.symbol_path(f), f.query) in pair_keys:
            spans.setdefault(f.path, []).append((f.start_line, f.end_line))
    for rel, fs in by_file.items():
        B.write_atomic(os.path.join(root, rel), B.blanked(originals[rel], fs))
    files = indexed_files(binary, root)
    out, total = [], 0
    for rel in files:
        for c in chunks_of(binary, root, rel):
            total += 1
            s, e = c["start_line"], c["end_line"]
            if any(s <= pe and ps <= e for ps, pe in spans.get(rel, ())):
                continue
            out.append({"package": pkg.id, "path": rel, "start_line": s, "end_line": e,
                        "kind": c.get("kind"), "text": embedding_text(rel, c)})
    located = len({(BP.symbol_path(f), f.query) for f in funcs} & pair_keys)
    return out, {"files": len(files), "chunks": total, "pair_functions_located": located}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-per-package", type=int, default=1000,
                    help="keep at most N chunks per package (seeded sample; default 1000)")
    ap.add_argument("--only", help="comma-separated package names (default: every package of the pairs)")
    args = ap.parse_args()
    t0 = time.time()
    out = BP.training_dir()
    with open(os.path.join(out, "pairs.manifest.json")) as fh:
        manifest = json.load(fh)
    pair_keys: dict[str, set] = {}
    with open(os.path.join(out, "pairs.jsonl")) as fh:
        for line in fh:
            r = json.loads(line)
            pair_keys.setdefault(r["package"], set()).add((r["symbol"], r["query"]))
    lock = json.load(open(BP.LOCK_PATH))
    known = {p.id: p for p in BP.PACKAGES}
    binary = raggrep_bin()
    rows, entries = [], []
    for e in manifest["packages"]:
        pid = f"{e['name']}-{e['version']}"
        if args.only and e["name"] not in args.only.split(","):
            continue
        pkg = known.get(pid)
        if pkg is None:
            B.log(f"  SKIP {pid}: not a pinned package of build_pairs.py")
            continue
        tp = time.time()
        path, _ = B.ensure_artifact(pkg, os.path.join(out, "downloads"), lock)
        with tempfile.TemporaryDirectory(prefix="raggrep-pool-", dir=out) as work:
            pool, info = package_pool(pkg, path, work, pair_keys.get(pid, set()), binary)
        kept = pool
        if len(pool) > args.max_per_package:
            rng = random.Random(f"{SEED}:{pid}")
            kept = [pool[i] for i in sorted(rng.sample(range(len(pool)), args.max_per_package))]
        rows.extend(kept)
        entries.append({"package": pid, "language": e["language"], "pairs": e["pairs"], **info,
                        "outside_pairs": len(pool), "kept": len(kept)})
        B.log(f"  {pid}: {info['files']} files, {info['chunks']} chunks, {len(pool)} outside the "
              f"pairs' functions ({info['pair_functions_located']}/{e['pairs']} pairs located), "
              f"kept {len(kept)} ({time.time() - tp:.1f}s)")
    tmp = os.path.join(out, "chunkpool.jsonl.tmp")
    with open(tmp, "w") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    os.replace(tmp, os.path.join(out, "chunkpool.jsonl"))
    B.write_atomic(os.path.join(out, "chunkpool.manifest.json"), json.dumps(
        {"built_by": "research/training/build_chunk_pool.py", "seed": SEED,
         "max_per_package": args.max_per_package, "total": len(rows), "packages": entries}, indent=2) + "\n")
    B.log(f"{len(rows)} chunks from {len(entries)} packages; wrote {out}/chunkpool.jsonl "
          f"({time.time() - t0:.0f}s)")


if __name__ == "__main__":
    main()
