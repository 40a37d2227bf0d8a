"""A Python approximation of raggrep's lexical side (server/src/index/lexical.rs) and of its
weighted fusion (server/src/search/mod.rs), for offline function-level checks only.

- Tokens: code_tokens() — each identifier whole, lowercased, plus its camelCase / snake_case /
  digit parts (port of lexical.rs; Unicode classes via str methods).
- Score: BM25 (k1 1.2, b 0.75, tantivy's idf) summed over the query's distinct terms in three
  fields: body (boost 1), symbol path (3), path (1.5); statistics per field over the pool.
- Fusion: each list contributes its top max(5k, 50) candidates; scores min-max normalised per
  list; 0.5 dense + 0.5 lexical; a candidate absent from a list gets 0 from it.
Not bit-exact with tantivy (its fieldnorms are quantised to one byte); close enough to ask
"does a dense-side change survive fusion?", not to report benchmark numbers.
"""

from __future__ import annotations

import math

import numpy as np

SYMBOL_BOOST, PATH_BOOST = 3.0, 1.5
K1, B = 1.2, 0.75


def _cls(c: str) -> str:
    if c.islower():
        return "l"
    if c.isupper():
        return "u"
    if c.isnumeric():
        return "d"
    if c == "_":
        return "o"
    return "l"


def split_identifier(word: str) -> list[tuple[int, int]]:
    parts, start = [], None
    for n, c in enumerate(word):
        cls = _cls(c)
        if cls == "o":
            if start is not None:
                parts.append((start, n))
                start = None
            continue
        if start is None:
            start = n
            continue
        prev = _cls(word[n - 1])
        nxt = _cls(word[n + 1]) if n + 1 < len(word) else None
        if (prev == "l" and cls == "u") or (prev == "d" and cls in "ul") or (prev in "ul" and cls == "d") \
                or (prev == "u" and cls == "u" and nxt == "l"):
            parts.append((start, n))
            start = n
    if start is not None:
        parts.append((start, len(word)))
    return parts


def code_tokens(text: str) -> list[str]:
    out, start = [], None

    def flush(s: int, e: int) -> None:
        word = text[s:e]
        parts = split_identifier(word)
        whole = word.lower()
        if len(whole.encode()) <= 64:
            out.append(whole)
        if len(parts) > 1:
            for ps, pe in parts:
                p = word[ps:pe].lower()
                if p and len(p.encode()) <= 64:
                    out.append(p)

    for i, ch in enumerate(text):
        w = ch.isalnum() or ch == "_"
        if w and start is None:
            start = i
        elif not w and start is not None:
            flush(start, i)
            start = None
    if start is not None:
        flush(start, len(text))
    return out


class BM25Pool:
    """BM25 over one pool of documents (path, symbol path, body), with per-term postings."""

    def __init__(self, docs: list[tuple[str, str, str]]):
        self.n = len(docs)
        self.fields = []
        for f, boost in ((2, 1.0), (1, SYMBOL_BOOST), (0, PATH_BOOST)):
            post: dict[str, tuple[list[int], list[int]]] = {}
            lens = np.zeros(self.n)
            for i, d in enumerate(docs):
                toks = code_tokens(d[f])
                lens[i] = len(toks)
                tf: dict[str, int] = {}
                for t in toks:
                    tf[t] = tf.get(t, 0) + 1
                for t, c in tf.items():
                    ids, cs = post.setdefault(t, ([], []))
                    ids.append(i)
                    cs.append(c)
            avg = max(float(lens.mean()) if self.n else 0.0, 1e-9)
            norm = K1 * (1 - B + B * lens / avg)
            postings = {t: (np.array(ids), np.array(cs, dtype=np.float64)) for t, (ids, cs) in post.items()}
            self.fields.append((boost, postings, norm))

    def scores(self, query: str, fields: tuple[int, ...] = (0, 1, 2)) -> np.ndarray:
        """Summed BM25 of the query's distinct terms; fields 0 body, 1 symbol, 2 path."""
        terms = sorted(set(code_tokens(query)))
        s = np.zeros(self.n)
        for k in fields:
            boost, postings, norm = self.fields[k]
            for t in terms:
                p = postings.get(t)
                if p is None:
                    continue
                ids, tf = p
                idf = math.log(1.0 + (self.n - len(ids) + 0.5) / (len(ids) + 0.5))
                s[ids] += boost * idf * tf * (K1 + 1) / (tf + norm[ids])
        return s


def fuse(dense: np.ndarray, lexical: np.ndarray, k: int = 10, dense_weight: float = 0.5) -> np.ndarray:
    """Fused score per pool member (-inf for members in neither candidate list)."""
    limit = max(5 * k, 50)
    out = np.full(len(dense), -np.inf)
    for scores, w, keep in ((dense, dense_weight, np.isfinite(dense)),
                            (lexical, 1.0 - dense_weight, lexical > 0)):
        idx = np.where(keep)[0]
        idx = idx[np.argsort(-scores[idx], kind="stable")][:limit]
        if len(idx) == 0:
            continue
        lo, hi = scores[idx].min(), scores[idx].max()
        norm = (scores[idx] - lo) / (hi - lo) if hi - lo > 1e-6 else np.ones(len(idx))
        cur = out[idx]
        out[idx] = np.where(np.isfinite(cur), cur, 0.0) + w * norm
    return out
