"""Tokens an agent reads before it has seen the gold function: raggrep's MCP `search` against a
grep-style exploration, on the retrieval benchmark's queries.

Usage: python3 benches/tokens_to_answer.py RAGGREP_BIN [--quick] [--json OUT]

For every benchmark query (a doc comment's first sentence; the documented function is the gold):

- raggrep: one `search` call as the MCP server answers it (k 10, default budget of 2,000 tokens).
  The hits come from `raggrep query - --json` in batch mode over the package's index (built once
  under the bench cache with `raggrep index`), and each is costed as the MCP tool sends it (the
  wire hit without path/start_line/end_line, plus `stale`), hits past the budget left out, as
  the server does. The agent reads the response envelope and the hits in order until one
  overlaps the gold function.
- raggrep, min_score 0.01: the same response with the hits scoring below 0.01 left out first
  (the MCP `min_score` argument; a hit's score is the probability that it is the answer).
- raggrep, then grep: when the response misses, the agent has read all of it and then explores
  as grep does (rg order).
- grep: the query's content words (lower case, 3+ letters, stop words dropped) as
  `rg -l -i -F -e w1 -e w2 …`; the agent reads rg's list, then whole matching files, until it
  has read the gold file. Two orders: rg's (`--sort path`, deterministic) and by number of
  matching lines (a smarter agent).

Tokens are counted with raggrep's estimator (`chunk::estimate_tokens`, ported below: WordPiece-like,
checked against the real tokenizer in the Rust tests), the same for both sides. A query whose gold
is never seen (not in the response / not among the matching files) costs infinity: medians and
p90s include them, and the "seen" rate is reported.
"""

import json
import math
import os
import re
import statistics
import subprocess
import sys
from collections import defaultdict

STOP = set("""a an and are as at be by can for from has have if in into is it its not of on or that the
this to was were will with which when where whether each any all only one its their then than
given return returns returned use used using get gets set sets new""".split())
BUDGET = 2000
K = 10
# The `min_score` the MCP `search` description suggests: hits less likely than 1 % to be the
# answer are left out of the response.
MIN_SCORE = 0.01


def estimate_tokens(text):
    tokens = 0
    word = 0
    for ch in text:
        if ch.isalnum():
            word += 1
            continue
        if word:
            tokens += 1 + max(word - 3, 0) // 5
            word = 0
        if not ch.isspace():
            tokens += 1
    if word:
        tokens += 1 + max(word - 3, 0) // 5
    return tokens


def overlaps(path, start, end, gold):
    return path == gold["path"] and start <= gold["end_line"] and gold["start_line"] <= end


def raggrep_side(binary, corpus, index_dir, queries):
    """Per query, for the response as sent and for the same response with the hits scoring below
    MIN_SCORE left out first (as the MCP tool's `min_score` does): (tokens until the gold hit or
    inf, tokens of the whole response)."""
    if not os.path.exists(os.path.join(index_dir, "CURRENT")):
        subprocess.run([binary, "index", corpus, "--index-dir", index_dir], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stdin = "".join(q["query"].replace("\n", " ") + "\n" for q in queries)
    out = subprocess.run([binary, "query", "-", "--root", corpus, "--index-dir", index_dir, "--json", "-k", str(K)],
                         input=stdin, capture_output=True, text=True, check=True).stdout
    costs, floored = [], []
    for q, line in zip(queries, out.splitlines()):
        hits = json.loads(line).get("results", [])
        costs.append(read_response(q, hits))
        floored.append(read_response(q, [h for h in hits if h["score"] >= MIN_SCORE]))
    return costs, floored


def read_response(q, hits):
    """(tokens until the gold hit or inf, tokens of the whole response) of one response."""
    envelope = {"query": q["query"], "took_ms": 1.0, "partial": False, "results": [], "tokens": 0, "omitted": 0}
    tokens = estimate_tokens(json.dumps(envelope, separators=(",", ":")))
    cost = math.inf
    for hit in hits:
        shown = {k: hit[k] for k in ("location", "symbol", "kind", "language", "score", "snippet")}
        shown["stale"] = False
        hit_tokens = estimate_tokens(json.dumps(shown, separators=(",", ":")))
        if tokens + hit_tokens > BUDGET:
            break
        tokens += hit_tokens
        if overlaps(hit["path"], hit["start_line"], hit["end_line"], q) and cost == math.inf:
            cost = tokens
    return cost, tokens


def content_words(query):
    words = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9_]*", query)]
    seen = []
    for w in words:
        if len(w) >= 3 and w not in STOP and w not in seen:
            seen.append(w)
    return seen


def grep_side(corpus, queries, file_tokens):
    """(tokens in rg's path order, tokens in match-count order) per query."""
    by_path, by_count = [], []
    for q in queries:
        words = content_words(q["query"])
        if not words:
            by_path.append(math.inf)
            by_count.append(math.inf)
            continue
        args = ["rg", "-c", "-i", "-F", "--sort", "path"]
        for w in words:
            args += ["-e", w]
        out = subprocess.run(args + ["."], cwd=corpus, capture_output=True, text=True).stdout
        matches = []
        for line in out.splitlines():
            path, _, count = line.rpartition(":")
            matches.append((path[2:] if path.startswith("./") else path, int(count)))
        listing = estimate_tokens("\n".join(p for p, _ in matches))
        for order, costs in ((matches, by_path), (sorted(matches, key=lambda m: -m[1]), by_count)):
            tokens = listing
            cost = math.inf
            for path, _ in order:
                tokens += file_tokens(path)
                if path == q["path"]:
                    cost = tokens
                    break
            costs.append(cost)
    return by_path, by_count


def summary(costs):
    ordered = sorted(costs)
    n = len(ordered)
    p = lambda f: ordered[min(n - 1, int(math.ceil(f * n)) - 1)]
    seen = sum(1 for c in costs if c != math.inf) / n
    return {"n": n, "median": p(0.5), "p90": p(0.9), "seen": round(seen, 3)}


def fmt(v):
    return "∞" if v == math.inf else f"{v:,.0f}"


def main():
    binary = sys.argv[1]
    quick = "--quick" in sys.argv
    cache = os.path.join(os.environ.get("RAGGREP_HOME", os.path.expanduser("~/.cache/raggrep")), "bench")
    data = os.path.join(cache, "retrieval-quick" if quick else "retrieval")
    queries = [json.loads(l) for l in open(os.path.join(data, "queries.jsonl"))]
    by_package = defaultdict(list)
    for q in queries:
        by_package[q["package"]].append(q)
    sides = ("raggrep", "raggrep, then grep", f"raggrep, min_score {MIN_SCORE}",
             f"raggrep, min_score {MIN_SCORE}, then grep", "grep (rg order)", "grep (by matches)")
    rows = defaultdict(lambda: {side: [] for side in sides})
    # Tokens of the whole response, answer in it or not: what every call costs the agent.
    responses = defaultdict(lambda: {"raggrep": [], "min_score": []})
    for package, qs in sorted(by_package.items()):
        corpus = os.path.join(data, "packages", package, "corpus")
        index_dir = os.path.join(cache, "tokens-indexes", "quick" if quick else "full", package)
        cache_tokens = {}

        def file_tokens(path):
            if path not in cache_tokens:
                try:
                    with open(os.path.join(corpus, path), encoding="utf-8", errors="replace") as f:
                        cache_tokens[path] = estimate_tokens(f.read())
                except OSError:
                    cache_tokens[path] = 0
            return cache_tokens[path]

        ours, floored = raggrep_side(binary, corpus, index_dir, qs)
        by_path, by_count = grep_side(corpus, qs, file_tokens)
        for q, (a, response), (f, f_response), b, c in zip(qs, ours, floored, by_path, by_count):
            # When the response misses, the agent read all of it and then explores as grep does.
            fallback = a if a != math.inf else response + b
            f_fallback = f if f != math.inf else f_response + b
            for key in ("all", q["language"]):
                for side, cost in zip(sides, (a, fallback, f, f_fallback, b, c)):
                    rows[key][side].append(cost)
                responses[key]["raggrep"].append(response)
                responses[key]["min_score"].append(f_response)
        print(f"{package}: {len(qs)} queries", file=sys.stderr)
    result = {lang: {side: summary(costs) for side, costs in sides.items()} for lang, sides in rows.items()}
    print("| language | n | " + " | ".join(f"{side}: median / p90 / seen" for side in sides) + " |")
    print("|---|---:|" + "---|" * len(sides))
    for lang in ["all"] + sorted(k for k in result if k != "all"):
        r = result[lang]
        cells = [f"{fmt(r[s]['median'])} / {fmt(r[s]['p90'])} / {r[s]['seen']:.0%}"
                 for s in sides]
        print(f"| {lang} | {r['raggrep']['n']} | " + " | ".join(cells) + " |")
    print()
    print(f"| language | response tokens, mean: raggrep | raggrep, min_score {MIN_SCORE} |")
    print("|---|---:|---:|")
    for lang in ["all"] + sorted(k for k in result if k != "all"):
        r = responses[lang]
        print(f"| {lang} | {statistics.mean(r['raggrep']):,.0f} | {statistics.mean(r['min_score']):,.0f} |")
    if "--json" in sys.argv:
        out = sys.argv[sys.argv.index("--json") + 1]
        finite = lambda v: None if v == math.inf else v
        clean = {lang: {side: {k: finite(v) for k, v in r.items()} for side, r in sides.items()}
                 for lang, sides in result.items()}
        with open(out, "w") as f:
            json.dump(clean, f, indent=1)


if __name__ == "__main__":
    main()
