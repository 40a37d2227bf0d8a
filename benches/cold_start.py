"""Cold start (issue 54): a repository raggrep has never seen, asked a question.

Usage:
    python3 benches/cold_start.py RAGGREP_BIN [--repo NAME ... | --split tune|test] [--at 1,5,30,60,120]
        [--first-only] [--json OUT] [--cache DIR] [--no-reference] [--keep]
        [--pad-lines N [--pad-from DIR]]
    python3 benches/cold_start.py RAGGREP_BIN --tree DIR [--question Q] [--at …] [--json OUT] [--no-reference]

For each repository of semble's benchmark (the local copy `benches/questions.py` reads; default:
commons-lang, 101k lines of Java in the tune half), on a fresh copy of its benchmark root with
the machine-wide embedding cache off (so every vector is computed):

1. the first answer: a one-shot `raggrep query` of the first question, timed from the start — it
   indexes the words, answers, and leaves a niced background indexer embedding the rest;
2. the quality curve: at each `--at` second (from the start) every question of the repository is
   asked at once (`raggrep query -`), scored as `questions.py` scores (NDCG@10, chunk protocol),
   beside how many chunks had a vector then (`raggrep status`);
3. when the implementation code has its vectors (`raggrep status`'s `code_pending` down to the
   few an edit leaves): from then on the default search ranks by the model's vectors, whatever
   tests (unit tests in a source file's test module too), docs and text still wait — one more
   sample, "code";
4. time to every vector (the background indexer's exit), its peak RSS, and the full answer;
5. beside the absolute times, the ratio against raw ONNX Runtime measured in the same run: the
   same model embedding a sample of the tree's chunk texts with Python onnxruntime
   (`benches/ort_reference.py`, tools venv of `scripts/bootstrap.sh`), projected to every chunk.

`--split tune|test` takes every repository of that half with a local copy; `--first-only` stops
the background indexer right after the first answer's quality is measured (the answer a user
gets before the model has embedded anything: the words and the static tier), and prints the
half's mean.

`--pad-lines N` asks the same questions of a monorepo: the repository at `<name>/` beside
registry packages under `packages/<package>/` (not `vendor/`: never indexed) until the tree holds about N lines (default source:
the sources cargo unpacked for this project's own `Cargo.lock`, `~/.cargo/registry/src`, every
package whole, in name order, none over `MAX_PACKAGE_LINES`) — its questions must then be
answered over everything else, and every time and RSS is the whole tree's (issue 54, goal 3).
Pick a repository in a language the padding does not hold (commons-lang: Java) so no package
copies its files.

`--tree DIR` times a tree outside the benchmark (a copy of it, as above) with no questions to
score: the first answer to `--question`, the code's vectors, every vector, RSS and the ratio
against raw ONNX Runtime (issue 54 asks them of a cold tantivy).

The CPU's vector extensions are printed with every run: int8 speed differs 2-3x between CPUs
with and without AVX-512 VNNI. Nothing here is fetched; the data is the local copy of semble's
benchmark (see `benches/questions.py`).
"""

import argparse
import importlib.util
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("questions", HERE / "questions.py")
questions = importlib.util.module_from_spec(spec)
spec.loader.exec_module(questions)

DEFAULT_REPOS = ["commons-lang"]
DEFAULT_AT = [1, 5, 15, 30, 60, 120, 240]
# The index's `CODE_PENDING_MAX` (server/src/index/mod.rs): up to this many chunks of code may
# still wait for a vector when the default search ranks by the model's.
CODE_PENDING_MAX = 64
REFERENCE_SAMPLE = 400
TOOLS_PYTHON = Path.home() / ".cache" / "raggrep" / "tools" / "venv" / "bin" / "python"


def cpu_flags():
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    flags = set()
    model = ""
    for line in text.splitlines():
        if line.startswith("flags") and not flags:
            flags = set(line.split(":", 1)[1].split())
        if line.startswith("model name") and not model:
            model = line.split(":", 1)[1].strip()
    wanted = ["avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8"]
    return {"model": model, "cpus": os.cpu_count(), "flags": [f for f in wanted if f in flags]}


def peak_rss_kb(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def alive(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        return state not in ("Z", "X")
    except OSError:
        return False


def score(answers, tasks, chunk_paths, full):
    """Mean NDCG@10 over the questions, and per category, as questions.py scores."""
    rows = []
    for task, answer in zip(tasks, answers):
        _, ranks, held = questions.judge(task, answer, chunk_paths, full)
        rows.append((task["category"], questions.ndcg_at_k(ranks, held, 10)))
    by_category = defaultdict(list)
    for category, value in rows:
        by_category[category].append(value)
    return questions.mean(v for _, v in rows), {c: questions.mean(v) for c, v in sorted(by_category.items())}


def status(binary, root, env):
    out = subprocess.run([binary, "status", "--root", str(root), "--json"], capture_output=True, text=True, env=env)
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        return {}


def ask_all(binary, root, tasks, env):
    cmd = [binary, "query", "-", "--root", str(root), "--json", "-k", "10"]
    started = time.monotonic()
    out = subprocess.run(
        cmd, input="".join(t["query"].replace("\n", " ") + "\n" for t in tasks), capture_output=True, text=True, env=env
    )
    elapsed = time.monotonic() - started
    answers = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    if len(answers) != len(tasks):
        raise SystemExit(f"{root}: {len(tasks)} questions, {len(answers)} answers\n{out.stderr[-2000:]}")
    return answers, elapsed


def reference_rate(binary, root, env, chunks, threads):
    """Raw ONNX Runtime's chunks per second on a sample of this tree's chunk texts."""
    if not TOOLS_PYTHON.exists():
        return None, f"no tools venv at {TOOLS_PYTHON} (scripts/bootstrap.sh makes it)"
    model = status(binary, root, env).get("model")
    model_dir = Path(env.get("RAGGREP_HOME") or Path.home() / ".cache" / "raggrep") / "models" / str(model)
    if not (model_dir / "model.onnx").exists():
        return None, f"no model.onnx in {model_dir}"
    rng = random.Random(54)
    sample = rng.sample(chunks, min(REFERENCE_SAMPLE, len(chunks)))
    texts = []
    for path, start, end in sample:
        try:
            lines = (root / path).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        texts.append(f"{path}\n" + "\n".join(lines[start - 1 : end]))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(texts, f)
        texts_file = f.name
    try:
        out = subprocess.run(
            [
                str(TOOLS_PYTHON),
                str(HERE / "ort_reference.py"),
                "--model-dir",
                str(model_dir),
                "--texts",
                texts_file,
                "--threads",
                str(threads),
            ],
            capture_output=True,
            text=True,
        )
    finally:
        os.unlink(texts_file)
    try:
        result = json.loads(out.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return None, f"ort_reference.py failed: {out.stderr[-500:]}"
    return result["chunks"] / result["seconds"], None


# A package bigger than this (generated bindings, vendored C libraries) is left out of the
# padding: one would be a tenth of a 1M-line tree.
MAX_PACKAGE_LINES = 60_000


def tree_lines(directory):
    """Lines of the text files under `directory` (no NUL byte in their first 8 KiB): about what
    the index will hold, which is how the result's line count is taken (a narrower count, of a
    few source suffixes, padded the first 1M-line tree to 1.25M)."""
    total = 0
    for path in directory.rglob("*"):
        if not path.is_file() or path.is_symlink() or ".git" in path.parts or ".raggrep" in path.parts:
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if b"\0" not in data[:8192]:
            total += data.count(b"\n")
    return total


def pad(root, lines_wanted, source):
    """Copies whole packages from `source` (one directory per package) into `root/packages/` in
    name order until the tree holds about `lines_wanted` lines; returns the packages copied."""
    vendor = root / "packages"
    vendor.mkdir()
    have = tree_lines(root)
    copied = []
    for package in sorted(p for p in source.iterdir() if p.is_dir()):
        if have >= lines_wanted:
            break
        lines = tree_lines(package)
        if lines == 0 or lines > MAX_PACKAGE_LINES:
            continue
        shutil.copytree(package, vendor / package.name, symlinks=True, ignore=shutil.ignore_patterns(".git", "target"))
        have += lines
        copied.append(package.name)
    return copied


def default_pad_source():
    registry = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo")) / "registry" / "src"
    dirs = sorted(p for p in registry.glob("*") if p.is_dir()) if registry.is_dir() else []
    return dirs[0] if dirs else registry


def run_repo(binary, cache, spec, tasks, args):
    prefix = spec.get("benchmark_root") or ""
    source = cache / "repos" / spec["name"] / prefix if prefix else cache / "repos" / spec["name"]
    source = spec.get("tree") or source
    work = Path(tempfile.mkdtemp(prefix=f"cold-{spec['name']}-"))
    packages = []
    if args.pad_lines:
        # A monorepo: the repository is one directory among registry packages.
        root = work / "monorepo"
        root.mkdir()
        shutil.copytree(source, root / spec["name"], symlinks=True, ignore=shutil.ignore_patterns(".raggrep"))
        packages = pad(root, args.pad_lines, Path(args.pad_from) if args.pad_from else default_pad_source())
        inside = spec["name"] + "/"

        def full(p):  # repository-relative; the padding's paths stay as they are (no target)
            if not p.startswith(inside):
                return p
            p = p[len(inside) :]
            return f"{prefix}/{p}" if prefix else p

    else:
        root = work / (Path(prefix).name if prefix else spec["name"])
        shutil.copytree(source, root, symlinks=True, ignore=shutil.ignore_patterns(".raggrep"))
        full = lambda p: f"{prefix}/{p}" if prefix else p  # noqa: E731  repository-relative
    env = dict(os.environ, RAGGREP_EMBEDDING_CACHE="off")
    samples = []
    try:
        started = time.monotonic()
        first = subprocess.run(
            [binary, "query", tasks[0]["query"] if tasks else args.question, "--root", str(root), "--json", "-k", "10"],
            capture_output=True,
            text=True,
            env=env,
        )
        first_s = time.monotonic() - started
        # The first query is this script's first child: the children's peak so far is its own.
        first_rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        if first.returncode != 0:
            raise SystemExit(f"first query failed: {first.stderr[-2000:]}")
        found = re.search(r"\(pid (\d+)", first.stderr)
        pid = int(found.group(1)) if found else None
        first_answer = json.loads(first.stdout.splitlines()[0]) if first.stdout.strip() else {}
        # Chunk spans for the ideal of each question (the same index whatever its vectors).
        chunks = questions.indexed_chunks(binary, root, [])
        chunk_paths = defaultdict(list)
        for path, start, end in chunks:
            chunk_paths[full(path)].append((start, end))
        peak = 0
        at = sorted(set(args.at))
        done_s = None

        def sample(label, state=None):
            state = state or status(binary, root, env)
            asked = time.monotonic() - started
            row = {
                "at": label,
                "s": round(asked, 2),
                "embedded": state.get("embedded", 0),
                "code_pending": state.get("code_pending"),
                "chunks": state.get("chunks", 0),
            }
            quality = "(no questions)"
            if tasks:
                answers, took = ask_all(binary, root, tasks, env)
                ndcg, categories = score(answers, tasks, chunk_paths, full)
                row.update(
                    ndcg10=ndcg,
                    categories=categories,
                    questions_s=round(took, 2),
                    partial=any(a.get("partial") for a in answers),
                )
                quality = f"NDCG@10 {ndcg:.3f}  ({took:.1f} s for {len(tasks)} questions)"
            samples.append(row)
            print(
                f"  {label:>8}  t={row['s']:7.1f}s  vectors {row['embedded']:6d}/{row['chunks']:<6d}  {quality}",
                file=sys.stderr,
            )

        code_s = None

        def wait_until(target):
            """Waits for the indexer up to `target` seconds from the start, sampling once (label
            "code") when the implementation code first has its vectors: from then on the default
            search ranks by the model, however many tests, docs and texts still wait."""
            nonlocal peak, code_s
            polled = 0.0
            while pid and alive(pid) and time.monotonic() - started < target:
                peak = max(peak, peak_rss_kb(pid) or 0)
                if code_s is None and time.monotonic() - polled >= 1.0:
                    polled = time.monotonic()
                    state = status(binary, root, env)
                    if state.get("code_pending", CODE_PENDING_MAX + 1) <= CODE_PENDING_MAX and state.get("embedded"):
                        code_s = time.monotonic() - started
                        sample("code", state)
                time.sleep(0.25)

        sample("first")
        # What every run reports; `curve` grows as the samples come in.
        result = {
            "repo": spec["name"],
            "language": spec["language"],
            "chunks": samples[-1]["chunks"],
            "first_answer_s": round(first_s, 2),
            "first_answer_hits": len(first_answer.get("results", [])),
            "first_answer_peak_rss_mb": round(first_rss_kb / 1024, 1),
            "curve": samples,
        }
        if args.first_only:
            if pid and alive(pid):
                os.kill(pid, 9)
            return result
        for target in at:
            wait_until(target)
            if pid and not alive(pid):
                break
            sample(f"{target}s")
        wait_until(float("inf"))
        done_s = time.monotonic() - started
        sample("complete")
        rate, why = (None, "skipped (--no-reference)")
        if not args.no_reference:
            rate, why = reference_rate(binary, root, env, chunks, os.cpu_count() or 1)
        total = samples[-1]["chunks"]
        reference = (
            {"chunks_per_s": round(rate, 1), "projected_s": round(total / rate, 1), "ratio": round(done_s / (total / rate), 2)}
            if rate
            else {"skipped": why}
        )
        lines = sum(
            (root / p).read_text(encoding="utf-8", errors="replace").count("\n")
            for p in {c[0] for c in chunks}
            if (root / p).is_file()
        )
        result.update(
            lines=lines,
            chunks=total,
            padding_packages=len(packages),
            code_embedded_s=round(code_s if code_s is not None else done_s, 1),
            every_vector_s=round(done_s, 1),
            background_peak_rss_mb=round(peak / 1024, 1) if peak else None,
            reference=reference,
        )
        return result
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary")
    parser.add_argument("--cache", default=os.environ.get("RAGGREP_QUESTIONS_CACHE", str(Path.home() / ".cache/raggrep/semble-bench")))
    parser.add_argument("--repo", action="append", help="repository of semble's benchmark (default: commons-lang)")
    parser.add_argument("--at", default=",".join(map(str, DEFAULT_AT)), type=lambda s: [float(x) for x in s.split(",") if x])
    parser.add_argument("--json", help="write every number here")
    parser.add_argument("--no-reference", action="store_true", help="skip the raw ONNX Runtime reference")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copies")
    parser.add_argument("--split", choices=["tune", "test"], help="every repository of this half with a local copy")
    parser.add_argument("--first-only", action="store_true", help="measure the first answer only, then stop the indexer")
    parser.add_argument("--pad-lines", type=int, default=0, help="ask the repository inside a monorepo of about this many lines")
    parser.add_argument("--pad-from", help="packages to pad with, one directory each (default: cargo's unpacked registry sources)")
    parser.add_argument("--tree", help="a tree outside the benchmark: times, vectors and RSS only (no questions to score)")
    parser.add_argument("--question", default="where are the settings read", help="--tree's first query")
    args = parser.parse_args()
    binary = str(Path(args.binary).resolve())
    cache = Path(args.cache)
    if args.tree:
        specs, tasks = {}, {}
    else:
        specs = {s["name"]: s for s in json.loads((cache / "benchmarks" / "repos.json").read_text())}
        tasks = questions.load_tasks(cache, specs)
    machine = cpu_flags()
    print(f"cpu: {machine.get('model')} ({machine.get('cpus')} cpus; {' '.join(machine.get('flags', []))})", file=sys.stderr)
    results = []
    if args.tree:
        tree = Path(args.tree).resolve()
        print(f"{tree.name} (a tree outside the benchmark, no questions):", file=sys.stderr)
        specs[tree.name], tasks[tree.name] = {"name": tree.name, "language": None, "tree": tree}, []
        args.repo = [tree.name]
    names = args.repo or DEFAULT_REPOS
    if args.split and not args.repo:
        names = sorted(
            n for n in specs if n in tasks and questions.split_of(n) == args.split and (cache / "repos" / n).is_dir()
        )
    for name in names:
        if not args.tree and (name not in specs or name not in tasks or questions.split_of(name) is None):
            raise SystemExit(f"{name}: not a measured repository of the benchmark")
        split = None if args.tree else questions.split_of(name)
        if not args.tree:
            print(f"{name} ({split} half, {len(tasks[name])} questions):", file=sys.stderr)
        result = run_repo(binary, cache, specs[name], tasks[name], args)
        result["split"] = split
        results.append(result)
        if args.first_only:
            print(f"  {result['chunks']} chunks: first answer {result['first_answer_s']} s", file=sys.stderr)
            continue
        ref = result["reference"]
        print(
            f"  {result['lines']} lines ({result['padding_packages']} padding packages), {result['chunks']} chunks:"
            f" first answer {result['first_answer_s']} s (peak RSS {result['first_answer_peak_rss_mb']} MB),"
            f" the code's vectors {result['code_embedded_s']} s, every vector {result['every_vector_s']} s"
            + (f" (raw ONNX Runtime: {ref['projected_s']} s, ratio {ref['ratio']})" if "ratio" in ref else f" ({ref['skipped']})")
            + f", background indexer peak RSS {result['background_peak_rss_mb']} MB",
            file=sys.stderr,
        )
    if len(results) > 1:
        first = [r["curve"][0]["ndcg10"] for r in results]
        times = sorted(r["first_answer_s"] for r in results)
        print(
            f"{len(results)} repositories: first answer NDCG@10 {questions.mean(first):.3f},"
            f" first answer median {times[len(times) // 2]} s, slowest {times[-1]} s",
            file=sys.stderr,
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine, "repos": results}, indent=1))


if __name__ == "__main__":
    main()
