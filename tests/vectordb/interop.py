"""`raggrep db` against design seed 002's own recipe (see interop.sh).

Usage: interop.py RAGGREP_BIN VENV_PYTHON, run by Debian's python3 with the PyPI sqlite-vec
package on PYTHONPATH. Vectors on the Python side come from VENV_PYTHON running
research/training/embed.py's recipe (raggrep's model, computed by onnxruntime in Python, not by
raggrep), passed through a JSON file.

(a) Python writes a database with the seed's schema and SQL (no key: the seed's INSERT leaves it
    out, so raggrep's migration gives the rows keys); `raggrep db search` on it ranks as the
    seed's search SQL does, with the same scores.
(b) raggrep writes a database (`raggrep db store`); the seed's search SQL in Python, with Python's
    query vectors, returns the same keys in the same order as `raggrep db search`, and the stored
    vectors are the ones Python computes for those texts.

Ends with "N passed, M failed".
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

import sqlite_vec

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Texts on distinct topics, and questions whose closest text is known.
TEXTS = [
    ("apple computer", "fruit company / hardware vendor"),
    ("banana bread baking instructions with ripe bananas", "recipe"),
    ("the Rust borrow checker rejects two mutable references to the same value", "compiler"),
    ("how to renew a passport at the embassy", "travel"),
    ("symptoms of the common cold: sneezing, sore throat, runny nose", "health"),
    ("the goalkeeper saved a penalty in the last minute of the final", "football"),
    ("compound interest grows savings exponentially over decades", "finance"),
    ("photosynthesis turns sunlight, water and carbon dioxide into sugar", "biology"),
]
QUERIES = [
    ("a company that sells laptops and phones", "apple computer"),
    ("how do I bake a loaf with bananas", "banana bread baking instructions with ripe bananas"),
    ("memory safety and aliasing in a systems language", TEXTS[2][0]),
    ("I have a fever and keep sneezing", TEXTS[4][0]),
    ("soccer match decided by a spot kick", TEXTS[5][0]),
    ("how plants make food from light", TEXTS[7][0]),
]

passed = 0
failed = 0


def check(name, condition, detail=""):
    global passed, failed
    if condition:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name} {detail}".rstrip())


EMBED_SNIPPET = """
import json, sys
sys.path.insert(0, sys.argv[1])
from embed import Embedder
texts = json.load(open(sys.argv[2]))
vectors = Embedder().embed_uncached(texts)
json.dump([[float(x) for x in v] for v in vectors], open(sys.argv[3], "w"))
"""


def python_vectors(venv_python, texts, work):
    """all-MiniLM-L6-v2 vectors of `texts`, computed in Python (no query prefix, as the seed)."""
    src, dst = os.path.join(work, "texts.json"), os.path.join(work, "vectors.json")
    with open(src, "w") as f:
        json.dump(texts, f)
    subprocess.run(["nice", venv_python, "-c", EMBED_SNIPPET, os.path.join(REPO, "research", "training"), src, dst],
                   check=True)
    with open(dst) as f:
        return dict(zip(texts, json.load(f)))


def connect(path):
    """The seed's recipe: sqlite3 with the sqlite-vec extension loaded."""
    db = sqlite3.connect(path)
    db.enable_load_extension(True)
    sqlite_vec.load(db)
    db.enable_load_extension(False)
    return db


def seed_search(db, vector, top_k):
    """The seed's similarity search SQL, verbatim (plus the key column)."""
    return db.execute(
        """SELECT
            key,
            embedding_text,
            value,
            vec_distance_cosine(embedding, vec_f32(?1)) AS score
          FROM vector_store
          ORDER BY score ASC
          LIMIT ?2""",
        (json.dumps(vector), top_k),
    ).fetchall()


def raggrep(binary, work, *args):
    out = subprocess.run([binary, "db", *args, "--json"], cwd=work, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"raggrep db {' '.join(args)} failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    na = sum(x * x for x in a) ** 0.5
    nb = sum(y * y for y in b) ** 0.5
    return dot / (na * nb)


def main(binary, venv_python):
    work = tempfile.mkdtemp(prefix="raggrep-vdb-interop-")
    try:
        run(binary, venv_python, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(binary, venv_python, work):
    vectors = python_vectors(venv_python, [t for t, _ in TEXTS] + [q for q, _ in QUERIES], work)
    check("python: 384-d vectors for every text", all(len(v) == 384 for v in vectors.values()))

    # (a) Python writes, raggrep reads.
    seed_db = os.path.join(work, "seed.sqlite")
    db = connect(seed_db)
    db.execute("""CREATE TABLE IF NOT EXISTS vector_store (
      key TEXT PRIMARY KEY, -- UUID
      embedding_text TEXT UNIQUE,
      value TEXT,
      embedding VECTOR(384)
    )""")
    for text, value in TEXTS:
        db.execute(
            """INSERT INTO vector_store (embedding_text, value, embedding)
               VALUES (?1, ?2, vec_f32(?3))
               ON CONFLICT(embedding_text) DO UPDATE SET value=excluded.value, embedding=excluded.embedding""",
            (text, value, json.dumps(vectors[text])),
        )
    db.commit()
    db.close()
    for query, expected in QUERIES:
        answer = raggrep(binary, work, "search", query, "--db", seed_db, "-k", "3")
        top = [r["embedding_text"] for r in answer]
        check(f"(a) raggrep search on the Python database: {query!r} -> {expected!r}",
              top[:1] == [expected], repr(top))
        db = connect(seed_db)
        python = seed_search(db, vectors[query], 3)
        db.close()
        check(f"(a) same order and scores as the seed's SQL: {query!r}",
              [r[1] for r in python] == top
              and all(abs(r[3] - h["score"]) < 0.01 for r, h in zip(python, answer)),
              f"python {[(r[1][:20], round(r[3], 4)) for r in python]} raggrep {[(h['embedding_text'][:20], h['score']) for h in answer]}")
    db = connect(seed_db)
    keys = [r[0] for r in db.execute("SELECT key FROM vector_store ORDER BY rowid")]
    db.close()
    check("(a) raggrep gave the key-less rows UUID keys, visible to Python",
          len(keys) == len(TEXTS) and all(k and len(k) == 36 for k in keys), repr(keys[:3]))
    answer = raggrep(binary, work, "search", QUERIES[0][0], "--db", seed_db)
    check("(a) search answers as the seed says: an array of {key, embedding_text, value, score}, 5 by default",
          isinstance(answer, list) and len(answer) == min(5, len(TEXTS))
          and all(set(h) == {"key", "embedding_text", "value", "score"} for h in answer), repr(answer)[:300])
    listed = raggrep(binary, work, "list", "--db", seed_db)
    check("(a) list answers as the seed says: an array of {key, embedding_text, value, embedding}",
          isinstance(listed, list) and all(set(r) == {"key", "embedding_text", "value", "embedding"} for r in listed),
          repr(listed)[:300])
    check("(a) raggrep lists the Python rows with their vectors",
          isinstance(listed, list) and [r["key"] for r in listed] == keys
          and all(cosine(r["embedding"], vectors[r["embedding_text"]]) > 0.99999 for r in listed))

    # (b) raggrep writes, Python reads.
    ours = os.path.join(work, "raggrep.sqlite")
    stored = {}
    for text, value in TEXTS:
        stored[text] = raggrep(binary, work, "store", text, value, "--db", ours)["key"]
    db = connect(ours)
    schema = db.execute("SELECT sql FROM sqlite_master WHERE name = 'vector_store'").fetchone()[0]
    check("(b) the seed's schema", "key TEXT PRIMARY KEY" in schema and "embedding_text TEXT UNIQUE" in schema
          and "embedding VECTOR(384)" in schema, schema)
    rows = db.execute("SELECT key, embedding_text, value, vec_to_json(embedding) FROM vector_store").fetchall()
    check("(b) Python reads every row raggrep stored",
          {r[1]: r[0] for r in rows} == stored and all(r[2] == dict(TEXTS)[r[1]] for r in rows))
    worst = min(cosine(json.loads(r[3]), vectors[r[1]]) for r in rows)
    check("(b) raggrep's stored vectors are the model's vectors as Python computes them (cosine > 0.99)",
          worst > 0.99, f"worst cosine {worst:.5f}")
    for query, expected in QUERIES:
        python = seed_search(db, vectors[query], 3)
        answer = raggrep(binary, work, "search", query, "--db", ours, "-k", "3")
        check(f"(b) the seed's search SQL in Python returns raggrep's top keys in order: {query!r}",
              [r[0] for r in python] == [h["key"] for h in answer] and python[0][1] == expected,
              f"python {[r[1][:20] for r in python]} raggrep {[h['embedding_text'][:20] for h in answer]}")
    db.close()


if __name__ == "__main__":
    try:
        main(sys.argv[1], sys.argv[2])
    except Exception as err:  # a crash is one failure, reported, never a silent pass
        import traceback
        traceback.print_exc()
        check("interop run completed", False, str(err))
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
