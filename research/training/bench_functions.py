#!/usr/bin/env python3
"""List the documented functions of the benchmark's TUNE packages for eval_adapter.py.

Usage:  research/training/eval_adapter.sh        (runs this first, in the tree-sitter venv)
        python bench_functions.py [--split tune]

Needs the benchmark built (benches/retrieval/build.sh; it is run here when missing). For every
package of the split (benches/retrieval/split.json), the pinned artifact is unpacked again and
build.py's extract() lists every documented function (the candidate pool); a benchmark query's
gold function is taken from the benchmark's blanked corpus (exactly the text raggrep indexes),
every other function with its own doc comment blanked the same way. The symbol path
(container + name) comes from the extraction, since queries.jsonl carries the name only.
Output: ${RAGGREP_HOME:-~/.cache/raggrep}/training/bench/<split>.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "benches", "retrieval"))
sys.path.insert(0, HERE)
import build as B  # noqa: E402
from build_pairs import symbol_path, training_dir  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", default="tune", choices=["tune", "test"])
    args = ap.parse_args()
    with open(os.path.join(REPO, "benches", "retrieval", "split.json")) as fh:
        split = json.load(fh)
    wanted = set(split[args.split])
    bench = os.path.join(B.bench_dir(), "retrieval")
    if not os.path.exists(os.path.join(bench, "queries.jsonl")):
        B.log("benchmark data missing: running benches/retrieval/build.sh")
        subprocess.run(["bash", os.path.join(REPO, "benches", "retrieval", "build.sh")], check=True)
    queries: dict[tuple, dict] = {}
    with open(os.path.join(bench, "queries.jsonl")) as fh:
        for line in fh:
            q = json.loads(line)
            if q["package"] in wanted:
                queries[(q["package"], q["path"], q["start_line"])] = q
    lock = B.load_lock()
    downloads = os.path.join(B.bench_dir(), "downloads")
    out_rows, matched = [], set()
    for pkg in B.PACKAGES:
        if pkg.id not in wanted:
            continue
        artifact, _ = B.ensure_artifact(pkg, downloads, lock)
        corpus_dir = os.path.join(bench, "packages", pkg.id, "corpus")
        with tempfile.TemporaryDirectory(prefix="raggrep-benchfn-") as tmp:
            orig = os.path.join(tmp, "corpus")
            B.unpack(pkg, artifact, orig)
            stats = {k: 0 for k in ("source_files", "generated_files", "parse_errors", "test_functions",
                                    "functions_with_doc", "doc_shares_line")}
            funcs, originals = B.extract(orig, stats)
        seen = set()
        n_q = 0
        for f in funcs:
            key = (pkg.id, f.path, f.start_line)
            if key in seen:
                continue
            seen.add(key)
            q = queries.get(key)
            if q is not None:
                with open(os.path.join(corpus_dir, f.path), "rb") as fh:
                    lines = B.split_lines(fh.read())
                matched.add(key)
                n_q += 1
            else:
                lines = B.split_lines(B.blanked(originals[f.path], [f]))
            code = b"\n".join(lines[f.start_line - 1:f.end_line]).decode("utf-8", errors="replace")
            out_rows.append({"package": pkg.id, "language": f.language, "path": f.path,
                             "symbol": symbol_path(f), "code": code[:4000],
                             "query": q["query"] if q else None, "qid": q["id"] if q else None})
        B.log(f"  {pkg.id}: {len(seen)} documented functions, {n_q} of them benchmark queries")
    missing = set(queries) - matched
    if missing:
        B.die(f"{len(missing)} benchmark queries not found among the extracted functions, e.g. "
              f"{sorted(missing)[:3]}")
    dst = os.path.join(training_dir(), "bench", f"{args.split}.jsonl")
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with open(dst, "w") as fh:
        for r in out_rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    B.log(f"wrote {dst}: {len(out_rows)} functions, {len(matched)} queries")


if __name__ == "__main__":
    main()
