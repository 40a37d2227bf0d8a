#!/usr/bin/env python3
"""Probe: would a query-time cross-reference signal help the learned fusion? (issue 16)

Usage:  python xref_probe.py [--train DUMP] [--tune DUMP] [--out JSON]
        (the bootstrap's tools venv; the dumps are fit_fusion.sh's, in training/fusion/)

The issue asks to boost code referenced by the top hits. Storing references in the index is a
format change, so this asks first whether the signal helps at all, with what every query
already has: its hybrid candidates. Per candidate, the name it defines (the first
`def`/`fn`/`func`/`function`/`class`/… or assignment in its first lines) and two features:
  refs       log(1 + the number of the fixed fusion's best --top other candidates (not
             overlapping it) whose text uses that name as a token);
  ref_file   1 if one of them is in another file.
Each is added to the 13 features of the dumps and the fusion refitted exactly as
fit_fusion.py does (same seed, hyper-parameters and epoch choice on the validation packages);
the 13-feature refit on the same dumps is the row to beat. TUNE is reported; fit_fusion.py's
evaluation reproduces the engine's TUNE numbers to the last digit.
Output: out/xref_probe.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import embed as E  # noqa: E402
import fit_fusion as F  # noqa: E402

DEFINES = re.compile(
    r"\b(?:def|fn|func|function|class|struct|enum|trait|interface|type|impl)\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)")
ASSIGNS = re.compile(r"^\s*(?:export\s+)?(?:const|let|var|static|pub\s+fn)?\s*([A-Za-z_]\w*)\s*[=:(]")
TOKEN = re.compile(r"[A-Za-z_]\w*")
TOO_COMMON = set("self this new get set from to of if for in is the a and or not def fn func function return".split())


def defined_name(text: str) -> str | None:
    head = "\n".join(text.split("\n")[:6])
    if m := DEFINES.search(head):
        return m.group(1)
    for line in head.split("\n"):
        if (m := ASSIGNS.match(line)) and m.group(1) not in TOO_COMMON:
            return m.group(1)
    return None


def with_references(rows: list[dict], corpora: F.Corpora, top: int) -> list[dict]:
    """The dump's rows with [refs, ref_file] appended to every candidate's features."""
    for row in rows:
        cands = row["candidates"]
        if not cands:
            continue
        texts = [corpora.text(row["package"], *c[:3]) for c in cands]
        tokens = [set(TOKEN.findall(t)) for t in texts]
        fixed = list(np.argsort(-F.fixed(np.array([c[3] for c in cands])), kind="stable")[:top])
        for i, c in enumerate(cands):
            name = defined_name(texts[i])
            refs, other_file = 0, False
            if name and len(name) >= 3 and name not in TOO_COMMON:
                for j in fixed:
                    if F.overlaps(cands[j], c):  # itself, or the same lines
                        continue
                    if name in tokens[j]:
                        refs += 1
                        other_file |= cands[j][0] != c[0]
            c[3] = list(c[3]) + [float(np.log1p(refs)), float(other_file)]
    return rows


def main() -> int:
    fusion = os.path.join(E.training_dir(), "fusion")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", default=os.path.join(fusion, "train-features.jsonl"))
    ap.add_argument("--tune", default=os.path.join(fusion, "tune-features.jsonl"))
    ap.add_argument("--tops", default="5,10,20,50", help="referring candidates to look at")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "xref_probe.json"))
    args = ap.parse_args()
    corpora = (F.Corpora(os.path.join(fusion, "retrieval")),
               F.Corpora(os.path.join(E.raggrep_home(), "bench", "retrieval")))

    def fit(train_items, tune_items, columns):
        pick = lambda items: [dict(it, X=None if it["X"] is None else it["X"][:, columns]) for it in items]
        train_items, tune_items = pick(train_items), pick(tune_items)
        tr = [it for it in train_items if it["split"] == "train"]
        va = [it for it in train_items if it["split"] == "validation"]
        P, mu, sd, epoch = F.train(tr, va, 400, 0.05, 1e-3, 16, lambda _: None)
        score = lambda X: F.forward((X - mu) / sd, P)[0]
        out = {"epoch": epoch, "extra_weights": [round(float(w), 4) for w in P["w"][13:]],
               "validation": F.metrics(F.ranks(va, score)), "tune": F.metrics(F.ranks(tune_items, score))}
        v, t = out["validation"], out["tune"]
        print(f"  validation {v['chunk_R@5']:.3f} / {v['chunk_MRR@10']:.3f} / {v['file_R@1']:.3f}   "
              f"TUNE {t['chunk_R@5']:.3f} / {t['chunk_MRR@10']:.3f} / {t['file_R@1']:.3f}   "
              f"(epoch {epoch}, weights {out['extra_weights']})", flush=True)
        return out

    base = list(range(13))
    print("13 features (chunk R@5 / MRR@10 / file R@1)")
    results = {"13 features": fit(F.prepare(F.load(args.train)), F.prepare(F.load(args.tune)), base)}
    for top in [int(t) for t in args.tops.split(",")]:
        train_items = F.prepare(with_references(F.load(args.train), corpora[0], top))
        tune_items = F.prepare(with_references(F.load(args.tune), corpora[1], top))
        for label, extra in (("refs", [13]), ("ref_file", [14]), ("both", [13, 14])):
            print(f"top {top}, + {label}")
            results[f"top {top} + {label}"] = fit(train_items, tune_items, base + extra)
    with open(args.out, "w") as fh:
        json.dump({"what": __doc__.split("\n")[0], "train": args.train, "tune": args.tune, "results": results},
                  fh, indent=1)
        fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
