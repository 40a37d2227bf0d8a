#!/usr/bin/env python3
"""History search (issue 57): does `raggrep log "question"` find the commits that did it?

Questions come from a repository's own merged pull requests: a merge "Merge pull request #N
from …" carries the pull request's title as its body. The title, with its ticket number
removed, is the question; the pull request's own commits (reachable from the merge's second
parent, not its first) are the answers. The merge commit itself holds the title word for word,
so it is left out of every ranking before scoring. Dependency bumps and release chores are
skipped. Each question is asked twice: as the title, and — the issue's protocol — with the words
the answers' own subjects use taken out (kept when two words or more remain), as someone who
never saw those commits would ask. Reported: R@1, R@5 and MRR@10 of raggrep's default (words + meaning), raggrep by words
only (no model), and a BM25 over commit messages alone (subject and body: the baseline the
issue names), all on the same questions.

The repositories are local copies made once in a session (never fetched here): pass a git
directory with --repo (a bare mirror is cloned into a work tree under --work first).

    python3 benches/history.py target/release/raggrep --repo /path/to/requests.git [--limit 150] [--json out.json]

Nothing is fitted on these repositories; decide on one, read the other once.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

SKIP = re.compile(r"\b(bump|dependabot|release|version|changelog|typo|merge branch|pre-commit|update (?:ci|requirements))\b", re.I)


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          errors="replace").stdout


def work_tree(source: Path, work: Path) -> Path:
    """A work tree of the repository (raggrep indexes a checkout), cloned once from the copy."""
    dest = work / source.parent.name.replace("+", "-")
    if not (dest / ".git").is_dir():
        work.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(source), str(dest)], check=True)
    return dest


def questions(repo: Path, limit: int):
    out = []
    log = git(repo, "log", "--merges", "--first-parent", "--format=%H%x1f%P%x1f%s%x1f%b%x1e")
    for record in log.split("\x1e"):
        fields = record.strip("\n").split("\x1f")
        if len(fields) < 4:
            continue
        merge, parents, subject, body = fields[0], fields[1].split(), fields[2], fields[3]
        if not subject.startswith("Merge pull request") or len(parents) != 2:
            continue
        title = body.strip().split("\n")[0].strip()
        if len(title.split()) < 3 or SKIP.search(title) or SKIP.search(subject):
            continue
        commits = git(repo, "rev-list", "--no-merges", f"{parents[0]}..{parents[1]}").split()
        if not commits or len(commits) > 20:
            continue
        question = re.sub(r"\(?#\d+\)?", "", title).strip(" .:-")
        # The issue's harder form: the words the answers' own subjects use are taken out, as
        # someone who never saw those commits would ask.
        subjects = set(tokens(" ".join(git(repo, "log", "-1", "--format=%s", c) for c in commits)))
        kept = [w for w in question.split() if not (set(tokens(w)) & subjects)]
        hard = " ".join(kept) if sum(len(w) > 2 for w in kept) >= 2 else None
        out.append({"merge": merge, "question": question, "hard": hard, "answers": commits})
    out.reverse()  # oldest first, then an even sample
    if len(out) > limit:
        step = len(out) / limit
        out = [out[int(i * step)] for i in range(limit)]
    return out


def tokens(text):
    words = re.findall(r"[A-Za-z][A-Za-z0-9]*", text)
    parts = []
    for word in words:
        parts.append(word.lower())
        parts.extend(p.lower() for p in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", word) if p.lower() != word.lower())
    return parts


class Bm25:
    def __init__(self, docs):
        self.docs = [Counter(d) for d in docs]
        self.lengths = [len(d) for d in docs]
        self.avg = sum(self.lengths) / max(1, len(self.lengths))
        self.df = Counter(t for d in self.docs for t in d)

    def rank(self, query, k1=1.2, b=0.75):
        n = len(self.docs)
        terms = set(tokens(query))
        scores = []
        for i, doc in enumerate(self.docs):
            s = 0.0
            for t in terms:
                tf = doc.get(t)
                if not tf:
                    continue
                idf = math.log((n - self.df[t] + 0.5) / (self.df[t] + 0.5) + 1)
                s += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * self.lengths[i] / self.avg))
            if s > 0:
                scores.append((s, i))
        scores.sort(reverse=True)
        return [i for _, i in scores]


def score(ranked, answers, merge):
    ranked = [c for c in ranked if c != merge][:10]
    rank = next((i for i, c in enumerate(ranked) if c in answers), None)
    return {"r1": rank == 0, "r5": rank is not None and rank < 5, "rr": 0.0 if rank is None else 1 / (rank + 1)}


def summary(rows):
    n = max(1, len(rows))
    return {"R@1": round(100 * sum(r["r1"] for r in rows) / n, 1), "R@5": round(100 * sum(r["r5"] for r in rows) / n, 1),
            "MRR@10": round(sum(r["rr"] for r in rows) / n, 3), "n": len(rows)}


def raggrep(binary, root, question, extra=()):
    out = subprocess.run([binary, *extra, "log", "--root", str(root), "--json", "-k", "11", "--", question],
                         capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit(f"raggrep log failed: {out.stderr.strip()}")
    return [hit["commit"] for hit in json.loads(out.stdout)["results"]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("raggrep")
    ap.add_argument("--repo", required=True, type=Path, help="a git directory (a local copy)")
    ap.add_argument("--work", type=Path, default=Path.home() / ".cache/raggrep/history-bench")
    ap.add_argument("--limit", type=int, default=150)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    binary = os.path.abspath(args.raggrep)
    root = work_tree(args.repo, args.work)
    qs = questions(root, args.limit)
    commits = [c.split("\x1f") for c in git(root, "log", "--format=%H%x1f%s%x1f%b%x1e").split("\x1e") if c.strip()]
    ids = [c[0].strip() for c in commits]
    bm25 = Bm25([tokens(" ".join(c[1:])) for c in commits])

    # The first call builds the history index (every commit read and embedded): timed apart.
    started = time.time()
    subprocess.run([binary, "log", "--root", str(root), "-k", "1", "index"], capture_output=True)
    build_s = time.time() - started
    size = sum(f.stat().st_size for f in (root / ".raggrep" / "history").iterdir())

    names = ["raggrep", "raggrep words only", "BM25 over messages"]
    rows = {form: {name: [] for name in names} for form in ("title", "title without the answers' words")}
    timings = []
    for q in qs:
        answers = set(q["answers"])
        for form, question in (("title", q["question"]), ("title without the answers' words", q["hard"])):
            if not question:
                continue
            t = time.time()
            rows[form]["raggrep"].append(score(raggrep(binary, root, question), answers, q["merge"]))
            timings.append(time.time() - t)
            words_only = raggrep(binary, root, question, ["--model", "/nonexistent"])
            rows[form]["raggrep words only"].append(score(words_only, answers, q["merge"]))
            rows[form]["BM25 over messages"].append(score([ids[i] for i in bm25.rank(question)[:11]], answers, q["merge"]))
    timings.sort()
    report = {
        "repo": root.name,
        "commits": len(ids),
        "questions": len(qs),
        "index_seconds": round(build_s, 1),
        "index_mb": round(size / 1e6, 1),
        "query_ms_median": round(1000 * timings[len(timings) // 2], 1) if timings else None,
        "systems": {form: {name: summary(r) for name, r in by.items()} for form, by in rows.items()},
    }
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
