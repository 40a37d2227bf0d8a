#!/usr/bin/env python3
"""Questions about whole files, from training packages only (issue 52): module documentation
as the query, the file it documents as the answer.

Usage:  research/training/build_question_data.sh [--data DIR] [--out DIR]
        (runs this file in the benchmark's tree-sitter venv, like build_fusion_data.sh)

Why: every learned part here (the towers, the fusion) saw one kind of query, a function's doc
comment answered by that function. People and agents also ask about a component ("JSON number
representation", "how are flags parsed") and the answer is a file. A module's own documentation
says what its file is for in the words a person would use, so it stands in for such a question.

What: a copy of the fusion dataset (build_fusion_data.sh's output: the same training packages,
corpora and train/validation split), with, for every source file whose module documentation has
a usable first sentence (in a file build.py takes queries from: no tests, examples, docs,
benches, vendored or generated code), one more query: that sentence, answered by the whole file (lines 1 to
its last, so any chunk of it is a hit). The documentation is blanked in the copy (its lines
kept, emptied), as build.py blanks a function's doc comment, so the answer cannot be
string-matched. Module documentation is:
  - Python: the module docstring;
  - Rust: the leading `//!` lines;
  - Go: the `// Package x ...` comment right above the package clause.
JavaScript and TypeScript files have no such convention and give none. A sentence is kept when
build.py's rules keep a doc comment's (first paragraph, markup cleaned, first sentence, at least
four words, not a benchmark query), once per package.

Output (not in the repo): ${RAGGREP_HOME:-~/.cache/raggrep}/training/fusion-questions/retrieval/
    packages/...      the fusion dataset's corpora, module documentation blanked where a
                      question was made from it
    queries.jsonl     the fusion dataset's rows, then the questions ("kind": "module")
    manifest.json     the fusion dataset's, plus the questions per package
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "benches", "retrieval"))
sys.path.insert(0, HERE)
import build as B  # noqa: E402  (benches/retrieval/build.py)
import build_pairs as BP  # noqa: E402

MIN_WORDS = 4


def home() -> str:
    return os.environ.get("RAGGREP_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "raggrep")


def docstring(body: list[ast.stmt]) -> tuple[str, int, int] | None:
    """The docstring opening `body` (a module's or a class's) and its lines (1-based, inclusive)."""
    first = body[0] if body else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return None
    return first.value.value, first.lineno, first.end_lineno or first.lineno


def python_docs(text: str) -> tuple[tuple[str, int, int] | None, list[tuple[str, int, int, int, int]]]:
    """The module docstring, and each documented top-level class: (docstring, its first and last
    line, the class's first and last line)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None, []
    types = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and (doc := docstring(node.body)):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            types.append((*doc, start, node.end_lineno or node.lineno))
    return docstring(tree.body), types


def rust_doc(lines: list[str]) -> tuple[str, int, int] | None:
    """The leading `//!` lines (inner doc comment) and their lines."""
    doc, start, end = [], None, None
    for i, line in enumerate(lines, 1):
        s = line.strip()
        if s.startswith("//!"):
            doc.append(s[3:].strip())
            start = start or i
            end = i
        elif doc or (s and not s.startswith("//") and not s.startswith("#![")):
            break
    return ("\n".join(doc), start, end) if doc else None


GO_PACKAGE = re.compile(r"^package\s+\w+")


def go_doc(lines: list[str]) -> tuple[str, int, int] | None:
    """The `// Package x ...` comment directly above the package clause."""
    for i, line in enumerate(lines):
        if GO_PACKAGE.match(line):
            j = i
            while j > 0 and lines[j - 1].strip().startswith("//"):
                j -= 1
            doc = [lines[k].strip()[2:].strip() for k in range(j, i)]
            if doc and doc[0].startswith("Package "):
                return "\n".join(doc), j + 1, i
            return None
    return None


RUST_ITEM = re.compile(r"^(pub(\([^)]*\))?\s+)?(struct|enum|trait|union)\s+\w+")
GO_TYPE = re.compile(r"^type\s+(\w+)\s+(struct|interface)\b")


def braced_end(lines: list[str], start: int) -> int:
    """The 1-based line that closes the item opened at `start` (0-based): brace counting from
    its first `{`; an item without one (`struct A;`) ends at its `;` line."""
    depth, opened = 0, False
    for i in range(start, len(lines)):
        for ch in lines[i]:
            if ch == "{":
                depth += 1
                opened = True
            elif ch == "}":
                depth -= 1
                if opened and depth == 0:
                    return i + 1
        if not opened and lines[i].rstrip().endswith(";"):
            return i + 1
    return len(lines)


def comment_type_docs(lines: list[str], item: re.Pattern, marker: str) -> list[tuple[str, int, int, int, int]]:
    """Top-level Rust items or Go types with a line-comment doc right above (attributes between
    allowed in Rust): (doc, its first and last line, the item's first and last line)."""
    out = []
    for i, line in enumerate(lines):
        if not item.match(line):
            continue
        j = i
        while j > 0 and lines[j - 1].startswith("#["):
            j -= 1
        k = j
        while k > 0 and lines[k - 1].startswith(marker) and not lines[k - 1].startswith(marker + "/"):
            k -= 1
        if k == j:
            continue
        doc = "\n".join(lines[m][len(marker):].strip() for m in range(k, j))
        out.append((doc, k + 1, j, k + 1, braced_end(lines, i)))
    return out


def documentation(rel: str, text: str, lines: list[str]) -> list[tuple[str, int, int, int, int, str]]:
    """What a file documents, in files build.py takes queries from (no tests, examples, docs,
    benches, vendored or generated code): (doc, its first and last line, the answer's first and
    last line, kind). The module's documentation is answered by the whole file; a documented
    top-level class (Python), struct, enum, trait or union (Rust), struct or interface type (Go)
    by the type."""
    language = B.source_language(rel)
    if language is None or B.is_generated(text.encode("utf-8")):
        return []
    if language == "python":
        module, types = python_docs(text)
    elif language == "rust":
        module, types = rust_doc(lines), comment_type_docs(lines, RUST_ITEM, "///")
    elif language == "go":
        module, types = go_doc(lines), comment_type_docs(lines, GO_TYPE, "//")
    else:
        return []
    found = [(*module, 1, len(lines), "module")] if module else []
    return found + [(*t, "type") for t in types]


def question_of(doc: str) -> str | None:
    q = B.first_sentence(B.clean_markup(B.first_paragraph(doc))).strip()
    return q if len(q.split()) >= MIN_WORDS else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(home(), "training", "fusion", "retrieval"))
    ap.add_argument("--out", default=os.path.join(home(), "training", "fusion-questions", "retrieval"))
    args = ap.parse_args()
    manifest = json.load(open(os.path.join(args.data, "manifest.json")))
    rows = [json.loads(line) for line in open(os.path.join(args.data, "queries.jsonl")) if line.strip()]
    split = {r["package"]: r.get("split") for r in rows}
    language = {r["package"]: r["language"] for r in rows}
    benchmark = BP.benchmark_queries()  # normalised by B.norm
    stage = args.out + ".staging"
    shutil.rmtree(stage, ignore_errors=True)
    shutil.copytree(os.path.join(args.data, "packages"), os.path.join(stage, "packages"), symlinks=True)
    questions, per_package = [], {}
    for package in sorted(split):
        corpus = os.path.join(stage, "packages", package, "corpus")
        seen: set[str] = set()
        for rel in sorted(B.list_files(corpus)):
            path = os.path.join(corpus, rel)
            try:
                text = open(path, encoding="utf-8").read()
            except (UnicodeDecodeError, OSError):
                continue
            lines = text.split("\n")
            blank = []
            for doc, start, end, answer_start, answer_end, kind in documentation(rel, text, lines):
                query = question_of(doc)
                key = B.norm(query) if query else None
                if not key or key in benchmark or key in seen:
                    continue
                seen.add(key)
                blank.append((start, end))
                questions.append({"id": f"{package}:{rel}:{answer_start}:{kind}", "package": package,
                                  "language": language[package], "query": query, "path": rel,
                                  "start_line": answer_start, "end_line": answer_end,
                                  "split": split[package], "kind": kind})
                per_package[package] = per_package.get(package, 0) + 1
            if blank:
                for start, end in blank:
                    for k in range(start - 1, end):
                        lines[k] = ""
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write("\n".join(lines))
    with open(os.path.join(stage, "queries.jsonl"), "w") as fh:
        for r in rows + questions:
            fh.write(json.dumps(r) + "\n")
    manifest["questions"] = per_package
    json.dump(manifest, open(os.path.join(stage, "manifest.json"), "w"), indent=1)
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    os.rename(stage, args.out)
    kinds = {k: sum(q["kind"] == k for q in questions) for k in ("module", "type")}
    print(f"{len(rows)} doc-comment queries, {len(questions)} questions {kinds}: {per_package}", file=sys.stderr)


if __name__ == "__main__":
    main()
