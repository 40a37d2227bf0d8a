"""The field's public benchmark (MinishLab/semble's `benchmarks/`), run through raggrep's own binary.

Usage:
    python3 benches/questions.py RAGGREP_BIN [--split tune|test|all] [--repo NAME ...]
        [--mode hybrid|dense|lexical] [--rerank] [--json OUT] [--markdown OUT]
        [--misses OUT] [--cache DIR] [--indexes NAME]

What it measures: semble's concept, architecture and symbol questions ("how does dependency
injection work", "CORS header handling middleware", "APIRouter") against raggrep's default
search, scored exactly as semble scores itself (its `benchmarks/metrics.py`, `common.py` and
`bench_hybrid.py`, chunk protocol):

- the targets of a query are its `relevant` plus `secondary` entries; a result covers a target
  when the paths match (one is a suffix of the other at a `/`) and, for a target with a line
  span, the lines overlap;
- each target contributes the rank of the first of the top 10 results covering it; NDCG@10 over
  those ranks (a rank counts once however many targets it covers), the ideal being
  min(10, targets the index holds) (a target counts as held when some indexed chunk covers it);
- the mean over a repository's queries, then the mean over repositories (categories and
  languages: the mean over repositories of the per-repository mean of that slice).

The data is not part of this repository and nothing is fetched here. `--cache` (default
`$RAGGREP_QUESTIONS_CACHE`, else `~/.cache/raggrep/semble-bench`) holds, copied once by hand:
`benchmarks/repos.json` and `benchmarks/annotations/<repo>.json` (semble's), `repos/<name>/`
(each repository's `benchmark_root` at its pinned revision, repository-relative paths) and
`published.json` (the peers' published per-repository NDCG@10: {label: {"source", "repos": {repo:
{"ndcg10", "categories"}}}}). A copy holds files, not symlinks that leave its root (raggrep
follows none of those, by design; one repository's source directory is all symlinks). The index
of each repository is built with `raggrep index` inside its copy (`.raggrep/`), or under
`CACHE/indexes/NAME/` with `--indexes NAME`, so a second run only queries.

The split is fixed (issue 52): tune = repositories whose name starts with a-l, test = m-z, with
axios, click, cobra, express and gin in test whatever their letter; aiohttp, redux and zod are
training packages and are never measured. Decide on tune; read test once per accepted step.

Annotations that do not match the pinned sources (a target file absent, a span past the end of
its file) are listed in the output, never dropped silently: such a target is not held by the
index, so it leaves the query's ideal as semble's own protocol does.
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

TRAINING = {"aiohttp", "redux", "zod"}
ALWAYS_TEST = {"axios", "click", "cobra", "express", "gin"}
TOP_K = 10
# The peer whose per-repository number each progress line shows.
PEER = "semble (hybrid)"


def split_of(name):
    if name in TRAINING:
        return None
    if name in ALWAYS_TEST:
        return "test"
    return "tune" if name[0].lower() <= "l" else "test"


def infer_category(query):
    if " " not in query.strip():
        return "symbol"
    lowered = query.lower()
    if lowered.startswith("how "):
        return "architecture"
    return "semantic"


def parse_target(raw):
    if isinstance(raw, str):
        return (raw, None, None)
    start, end = raw.get("start_line"), raw.get("end_line")
    return (str(raw["path"]), int(start) if start is not None else None, int(end) if end is not None else None)


def path_matches(file_path, target_path):
    a = file_path.replace("\\", "/")
    b = target_path.replace("\\", "/")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def covers(path, start, end, target):
    tpath, tstart, tend = target
    if not path_matches(path, tpath):
        return False
    if tstart is None or tend is None:
        return True
    return not (end < tstart or start > tend)


def dcg(relevances):
    return sum(rel / math.log2(i + 2) for i, rel in enumerate(relevances))


def ndcg_at_k(ranks, n_relevant, k):
    if n_relevant == 0:
        return 0.0
    relevances = [0] * k
    for rank in ranks:
        if 1 <= rank <= k:
            relevances[rank - 1] = 1
    ideal = dcg([1] * min(k, n_relevant))
    return dcg(relevances) / ideal if ideal > 0 else 0.0


def load_tasks(cache, specs):
    tasks = defaultdict(list)
    for name in specs:
        path = cache / "benchmarks" / "annotations" / f"{name}.json"
        if not path.exists():
            continue
        for item in json.loads(path.read_text(encoding="utf-8")):
            repo = item.get("repo", name)
            if repo != name:
                continue
            category = item.get("category")
            tasks[name].append(
                {
                    "query": item["query"],
                    "targets": [parse_target(t) for t in item.get("relevant", [])]
                    + [parse_target(t) for t in item.get("secondary", [])],
                    "category": category if isinstance(category, str) else infer_category(item["query"]),
                }
            )
    return tasks


def run(cmd, **kwargs):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kwargs)


def ensure_index(binary, root, where):
    started = time.monotonic()
    run([binary, "index", str(root), *where])
    return time.monotonic() - started


def indexed_chunks(binary, root, where):
    """(path, start, end) of every chunk in the index, paths root-relative."""
    out = run([binary, "inspect", "--root", str(root), "--chunks", "--json", *where]).stdout
    chunks = []
    for line in out.splitlines():
        row = json.loads(line)
        if "start_line" in row and "end_line" in row and "path" in row:
            chunks.append((row["path"], row["start_line"], row["end_line"]))
    return chunks


def query_all(binary, root, queries, mode, rerank, where):
    cmd = [binary, "query", "-", "--root", str(root), "--json", "-k", str(TOP_K), "--mode", mode, *where]
    if rerank:
        cmd.append("--rerank")
    started = time.monotonic()
    out = run(cmd, input="".join(q.replace("\n", " ") + "\n" for q in queries)).stdout
    elapsed = time.monotonic() - started
    answers = [json.loads(line) for line in out.splitlines() if line.strip()]
    if len(answers) != len(queries):
        raise SystemExit(f"{root}: {len(queries)} queries, {len(answers)} answers")
    return answers, elapsed


# A line that is neither a comment, a preprocessor line nor an import or re-export: code of the
# file's own.
NOT_OWN_CODE = re.compile(r"^(#|//|/\*|\*|--|import\b|from\s+\S+\s+import\b|use\b|require\b|export\s+\*|package\b)")


def is_shim(text):
    """A file with no code of its own: includes, imports or re-exports and comments only (a
    compatibility header that now includes another, an `__init__.py` that re-exports)."""
    own = [line for line in (raw.strip() for raw in text.splitlines()) if line and not NOT_OWN_CODE.match(line)]
    return not own


def mismatches(checkout, targets, prefix=""):
    """Targets that do not match the pinned source: file absent, outside the benchmark root (the
    part of the repository that is indexed), span past its end, or a whole file that is now a
    shim. Listed, still scored: the published numbers score them too."""
    out = []
    for path, start, end in targets:
        file = checkout / path
        if not file.is_file() and prefix and (checkout / prefix / path).is_file():
            # Some annotations name their files from the benchmark root rather than the
            # repository's; `path_matches` takes a path's suffix, so they score all the same.
            file = checkout / prefix / path
        if not file.is_file():
            out.append(f"{path}: no such file")
            continue
        if prefix and not path.startswith(prefix.rstrip("/") + "/") and not (checkout / prefix / path).is_file():
            out.append(f"{path}: outside the benchmark root {prefix} (not indexed)")
            continue
        text = file.read_text(encoding="utf-8", errors="replace")
        if end is not None:
            lines = text.count("\n") + 1
            if end > lines:
                out.append(f"{path}:{start}-{end}: the file has {lines} lines")
        elif is_shim(text):
            out.append(f"{path}: a shim (no code of its own: includes, imports and comments only)")
    return out


def mean(values):
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def judge(task, answer, chunk_paths, full):
    """An answer's first TOP_K hits (repository-relative), the rank of the first hit covering
    each target, and how many targets some indexed chunk covers (the ideal's size)."""
    hits = [(full(h["path"]), h["start_line"], h["end_line"]) for h in answer.get("results", [])][:TOP_K]
    ranks = []
    for target in task["targets"]:
        for rank, (path, start, end) in enumerate(hits, 1):
            if covers(path, start, end, target):
                ranks.append(rank)
                break
    held = sum(
        1
        for target in task["targets"]
        if any(
            covers(path, s, e, target)
            for path, spans in chunk_paths.items()
            if path_matches(path, target[0])
            for s, e in spans
        )
    )
    return hits, ranks, held


def evaluate_repo(binary, cache, spec, tasks, args):
    checkout = cache / "repos" / spec["name"]
    prefix = spec.get("benchmark_root") or ""
    root = checkout / prefix if prefix else checkout
    if not root.is_dir():
        return None
    # `--indexes NAME` keeps each binary's indexes apart (another chunker's index would be
    # rebuilt at every switch); by default the index is the root's own `.raggrep/`.
    where = ["--index-dir", str(cache / "indexes" / args.indexes / spec["name"])] if args.indexes else []
    index_s = ensure_index(binary, root, where)
    chunks = indexed_chunks(binary, root, where)
    full = lambda p: f"{prefix}/{p}" if prefix else p  # noqa: E731  repository-relative
    chunk_paths = defaultdict(list)
    for path, start, end in chunks:
        chunk_paths[full(path)].append((start, end))
    answers, query_s = query_all(binary, root, [t["query"] for t in tasks], args.mode, args.rerank, where)
    rows = []
    for task, answer in zip(tasks, answers):
        hits, ranks, held = judge(task, answer, chunk_paths, full)
        rows.append(
            {
                "query": task["query"],
                "category": task["category"],
                "ndcg10": ndcg_at_k(ranks, held, TOP_K),
                "ranks": ranks,
                "held": held,
                "targets": [f"{p}:{s}-{e}" if s is not None else p for p, s, e in task["targets"]],
                "top": [f"{p}:{s}-{e}" for p, s, e in hits],
                "mismatched": mismatches(checkout, task["targets"], prefix),
            }
        )
    return {
        "repo": spec["name"],
        "language": spec["language"],
        "split": split_of(spec["name"]),
        "chunks": len(chunks),
        "index_s": round(index_s, 2),
        "query_ms_mean": round(1000 * query_s / max(1, len(tasks)), 1),
        "ndcg10": mean(r["ndcg10"] for r in rows),
        "categories": {
            c: mean(r["ndcg10"] for r in rows if r["category"] == c) for c in sorted({r["category"] for r in rows})
        },
        "queries": rows,
    }


def published_for(published, results):
    """Per method: its mean NDCG@10 over the measured repositories it published, raggrep's over
    the same ones, and how many they are (a method that published none is left out)."""
    out = {}
    for label, method in published.items():
        per_repo = method.get("repos", {})
        common = [r for r in results if r["repo"] in per_repo]
        if not common:
            continue
        names = [r["repo"] for r in common]
        out[label] = {
            "repos": len(common),
            "ndcg10": mean(per_repo[r]["ndcg10"] for r in names),
            "raggrep_ndcg10": mean(r["ndcg10"] for r in common),
            "categories": {
                c: mean(per_repo[r]["categories"][c] for r in names if c in per_repo[r].get("categories", {}))
                for c in ("architecture", "semantic", "symbol")
                if any(c in per_repo[r].get("categories", {}) for r in names)
            },
            "per_repo": {r: per_repo[r]["ndcg10"] for r in names},
        }
    return out


def summary(results, published):
    repos = [r["repo"] for r in results]
    by_language = defaultdict(list)
    for r in results:
        by_language[r["language"]].append(r)
    categories = ("architecture", "semantic", "symbol")
    return {
        "repos": repos,
        "queries": sum(len(r["queries"]) for r in results),
        "ndcg10": mean(r["ndcg10"] for r in results),
        "categories": {
            c: mean(r["categories"][c] for r in results if c in r["categories"])
            for c in categories
            if any(c in r["categories"] for r in results)
        },
        "languages": {lang: mean(r["ndcg10"] for r in rs) for lang, rs in sorted(by_language.items())},
        "published": published_for(published, results),
    }


def fmt(x):
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def markdown(split_summaries, results, published_labels):
    lines = []
    for split, s in split_summaries.items():
        lines.append(f"### {split}: {len(s['repos'])} repositories, {s['queries']} queries")
        lines.append("")
        lines.append("| system | NDCG@10 | architecture | semantic | symbol |")
        lines.append("|---|---:|---:|---:|---:|")
        lines.append(
            f"| **raggrep** | **{fmt(s['ndcg10'])}** | "
            + " | ".join(fmt(s["categories"].get(c)) for c in ("architecture", "semantic", "symbol"))
            + " |"
        )
        for label, p in s["published"].items():
            lines.append(
                f"| {label} ({p['repos']} repositories; raggrep on them {fmt(p['raggrep_ndcg10'])}) | {fmt(p['ndcg10'])} | "
                + " | ".join(fmt(p["categories"].get(c)) for c in ("architecture", "semantic", "symbol"))
                + " |"
            )
        missing = [label for label in published_labels if label not in s["published"]]
        if missing:
            lines.append("")
            lines.append(f"Published for none of these repositories: {', '.join(missing)}.")
        lines.append("")
        header = ["repository", "language", "queries", "raggrep", *s["published"].keys()]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * 3 + "---:|" * (len(header) - 3))
        for r in results:
            if r["repo"] not in s["repos"]:
                continue
            row = [r["repo"], r["language"], str(len(r["queries"])), fmt(r["ndcg10"])]
            row += [fmt(p["per_repo"].get(r["repo"])) for p in s["published"].values()]
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
        lines.append("| language | raggrep | " + " | ".join(s["published"].keys()) + " |")
        lines.append("|---|---:|" + "---:|" * len(s["published"]))
        for lang, value in s["languages"].items():
            repos = [r["repo"] for r in results if r["language"] == lang and r["repo"] in s["repos"]]
            peers = [fmt(mean(p["per_repo"][x] for x in repos if x in p["per_repo"])) for p in s["published"].values()]
            lines.append(f"| {lang} | {fmt(value)} | " + " | ".join(peers) + " |")
        lines.append("")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary")
    default_cache = os.environ.get("RAGGREP_QUESTIONS_CACHE", str(Path.home() / ".cache/raggrep/semble-bench"))
    parser.add_argument("--cache", default=default_cache)
    parser.add_argument("--split", choices=["tune", "test", "all"], default="tune")
    parser.add_argument("--repo", action="append", default=[])
    parser.add_argument("--mode", default="hybrid")
    parser.add_argument("--rerank", action="store_true")
    parser.add_argument("--indexes", help="keep the indexes under CACHE/indexes/NAME/<repo> (one name per binary)")
    parser.add_argument("--json", help="write every number and every query's ranks here")
    parser.add_argument("--markdown", help="write the tables here")
    parser.add_argument("--misses", help="write the queries below NDCG@10 1.0, with their top 10, here")
    args = parser.parse_args()

    cache = Path(args.cache).expanduser()
    repos_json = cache / "benchmarks" / "repos.json"
    if not repos_json.exists():
        raise SystemExit(f"no benchmark data at {cache} (see this file's docstring: the cache is copied by hand)")
    specs = {s["name"]: s for s in json.loads(repos_json.read_text(encoding="utf-8"))}
    tasks = load_tasks(cache, specs)
    published_path = cache / "published.json"
    published = json.loads(published_path.read_text(encoding="utf-8")) if published_path.exists() else {}

    names = sorted(n for n in tasks if split_of(n) is not None)
    if args.split != "all":
        names = [n for n in names if split_of(n) == args.split]
    if args.repo:
        names = [n for n in names if n in args.repo]
    results, unavailable = [], []
    for name in names:
        started = time.monotonic()
        result = evaluate_repo(args.binary, cache, specs[name], tasks[name], args)
        if result is None:
            unavailable.append(name)
            print(f"{name:<20} unavailable (no copy under {cache / 'repos'})", file=sys.stderr)
            continue
        results.append(result)
        peer = published.get(PEER, {}).get("repos", {}).get(name, {}).get("ndcg10")
        print(
            f"{name:<20} {result['language']:<11} {result['split']:<5} q={len(result['queries']):>3} "
            f"chunks={result['chunks']:>6} ndcg10={result['ndcg10']:.3f} "
            + (f"({PEER}: {peer:.3f}) " if peer is not None else "")
            + " ".join(f"{c[:4]}={v:.3f}" for c, v in result["categories"].items())
            + f"  ({time.monotonic() - started:.0f} s)",
            file=sys.stderr,
        )
    if not results:
        raise SystemExit("no repository measured")
    splits = {}
    for split in ("tune", "test"):
        part = [r for r in results if r["split"] == split]
        if part:
            splits[split] = summary(part, published)
    for split, s in splits.items():
        peers = "  ".join(
            f"{label} {p['ndcg10']:.3f} (raggrep {p['raggrep_ndcg10']:.3f}, {p['repos']} repos)"
            for label, p in s["published"].items()
        )
        cats = " ".join(f"{c}={v:.3f}" for c, v in s["categories"].items())
        print(
            f"{split}: {len(s['repos'])} repos, {s['queries']} queries: raggrep NDCG@10 {s['ndcg10']:.3f} ({cats})"
            + (f"; published, each on the repos it covers: {peers}" if peers else ""),
            file=sys.stderr,
        )
    mismatched = [
        {"repo": r["repo"], "query": q["query"], "target": m} for r in results for q in r["queries"] for m in q["mismatched"]
    ]
    if mismatched:
        print(f"{len(mismatched)} annotation targets do not match the pinned sources:", file=sys.stderr)
        for m in mismatched:
            print(f"  {m['repo']}: {m['query']!r}: {m['target']}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {"splits": splits, "repos": results, "unavailable": unavailable, "mismatched": mismatched}, indent=1
            )
        )
    if args.markdown:
        Path(args.markdown).write_text(markdown(splits, results, list(published)) + "\n")
    if args.misses:
        with open(args.misses, "w") as f:
            for r in results:
                for q in r["queries"]:
                    if q["ndcg10"] < 1.0:
                        f.write(f"[{r['repo']}] [{q['category']}] ndcg={q['ndcg10']:.3f} ranks={q['ranks']} {q['query']!r}\n")
                        f.write(f"    targets: {q['targets']}\n")
                        for i, hit in enumerate(q["top"], 1):
                            f.write(f"    {i:>2}. {hit}\n")


if __name__ == "__main__":
    main()
