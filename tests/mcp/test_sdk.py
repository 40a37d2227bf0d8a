"""`raggrep mcp` driven by the official MCP Python SDK over stdio and over Streamable HTTP.

Usage: test_sdk.py RAGGREP_BIN FIXTURE_DIR. Copies the fixture to a temporary directory,
starts the real server on it (real model), calls every tool with good and bad arguments, and
checks that a file written on disk during the session is found without a reindex call. Then the
same checks over HTTP (`raggrep mcp --http 127.0.0.1:0`), plus what only HTTP has: two clients
at once, the endpoint path, browser origins refused, loopback only, sessions ended by DELETE as the
transport specification says (200, then 404; no SDK warning on exit), SIGTERM ends the server.
Ends with "N passed, M failed"; exits non-zero on any failure.
"""

import json
import logging
import mmap
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request

import anyio
from mcp import Client, StdioServerParameters

EXPECTED_TOOLS = {"search", "find_similar", "context", "outline", "find_symbol", "status", "reindex", "vector_db", "search_history"}

passed = 0
failed = 0
phase = ""
numbers = {}


def check(name, condition, detail=""):
    global passed, failed
    name = f"[{phase}] {name}" if phase else name
    if condition:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name} {detail}".rstrip())


def text_of(result):
    return " ".join(getattr(c, "text", "") for c in result.content)


async def call(client, tool, arguments):
    return await client.call_tool(tool, arguments)


async def expect_error(client, name, tool, arguments, needle=None):
    """A bad call must be a tool error (isError) with a message, not a crash or an empty answer."""
    try:
        result = await call(client, tool, arguments)
    except Exception as err:  # a protocol error is a failure here: agents need isError results
        check(name, False, f"raised {type(err).__name__}: {err}")
        return
    message = text_of(result)
    ok = result.is_error and message and (needle is None or needle in message)
    check(name, ok, f"is_error={result.is_error} text={message[:200]!r}")


def locations(result):
    return [h["location"] for h in (result.structured_content or {}).get("results", [])]


async def main(binary, fixture):
    work = tempfile.mkdtemp(prefix="raggrep-mcp-")
    root = os.path.join(work, "polyglot")
    shutil.copytree(fixture, root)
    with open(os.path.join(work, "outside.py"), "w") as f:
        f.write("def outside_secret():\n    return 42\n")
    os.symlink(os.path.join(work, "outside.py"), os.path.join(root, "escape.py"))
    root = os.path.realpath(root)

    params = StdioServerParameters(command=binary, args=["mcp", root], env={"RAGGREP_LOG": "warn"})
    try:
        async with Client(params, read_timeout_seconds=60) as client:
            await run_checks(client, root, "stdio")
        # Hosts that still speak the initialize handshake (pre-2026 protocol versions).
        async with Client(params, read_timeout_seconds=60, mode="legacy") as client:
            result = await call(client, "find_symbol", {"name": "validate_token"})
            check(f"legacy handshake ({client.protocol_version}): tools answer",
                  not result.is_error and client.server_info.name == "raggrep", text_of(result)[:200])
        await http_checks(binary, root)
        await without_model_checks(binary, root)
    finally:
        shutil.rmtree(work, ignore_errors=True)


async def without_model_checks(binary, root):
    """Without its model the server still starts, and every tool says why and what to do."""
    global phase
    phase = "no model"
    params = StdioServerParameters(command=binary, args=["--model", "no-such-model-here", "mcp", root],
                                   env={"RAGGREP_LOG": "error"})
    async with Client(params, read_timeout_seconds=60) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        check("the server starts and lists its tools", tools == EXPECTED_TOOLS, repr(tools))
        for tool, arguments in [("search", {"query": "validate a token"}), ("status", {}),
                                ("find_symbol", {"name": "validate_token"}), ("outline", {"path": "src/auth.py"}),
                                ("reindex", {})]:
            result = await call(client, tool, arguments)
            message = text_of(result)
            check(f"{tool}: an error with the cause and the fix", result.is_error
                  and message.startswith("raggrep is not ready: cannot load the embedding model")
                  and "no-such-model-here" in message and "bootstrap" in message, message[:300])
    phase = ""


def start_http(binary, root, address="127.0.0.1:0"):
    """Starts `raggrep mcp --http`; returns (process, url) once it prints where it serves."""
    server = subprocess.Popen([binary, "mcp", "--http", address, root], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "RAGGREP_LOG": "warn"})
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = server.stderr.readline()
        if not line:
            break
        if "serving http://" in line:
            return server, line.strip().split("serving ", 1)[1]
    server.kill()
    raise RuntimeError(f"raggrep mcp --http did not start: {server.stderr.read()[:500]}")


def stop(server, sig):
    """Sends `sig` and returns the exit code, or "hung" (then kills it) after 15 s."""
    server.send_signal(sig)
    try:
        return server.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.kill()
        return "hung"


def http_request(url, method="POST", headers=None, body=b"{}"):
    """Returns (status, response headers) of one plain HTTP request."""
    request = urllib.request.Request(url, data=body if method == "POST" else None, method=method,
                                     headers={"Content-Type": "application/json",
                                              "Accept": "application/json, text/event-stream", **(headers or {})})
    try:
        # The status and headers are all these checks read; a body may be an open event stream.
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers
    except urllib.error.HTTPError as err:
        return err.code, err.headers


def http_status(url, headers=None, body=b"{}"):
    return http_request(url, headers=headers, body=body)[0]


class Warnings(logging.Handler):
    """Collects what the SDK logs at WARNING or above (it reports a failed session end there)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def session_end_checks(url):
    """DELETE ends a session: 200 once, then 404; a session id nobody issued is 404 too."""
    version = "2025-06-18"
    initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}).encode()
    status, headers = http_request(url, headers={"MCP-Protocol-Version": version}, body=initialize)
    session = headers.get("Mcp-Session-Id") if headers else None
    check("http: initialize opens a session", status == 200 and session, f"status {status}")
    if not session:
        return
    ending = {"Mcp-Session-Id": session, "MCP-Protocol-Version": version}
    first, _ = http_request(url, "DELETE", ending)
    check("http: DELETE ends the session with 200", first == 200, f"status {first}")
    again, _ = http_request(url, "DELETE", ending)
    check("http: DELETE of an ended session is 404", again == 404, f"status {again}")
    listed = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode()
    after, _ = http_request(url, headers=ending, body=listed)
    check("http: an ended session answers no more requests (404)", after == 404, f"status {after}")
    unknown, _ = http_request(url, "DELETE", {**ending, "Mcp-Session-Id": "not-a-session"})
    check("http: DELETE of an unknown session is 404", unknown == 404, f"status {unknown}")


async def http_checks(binary, root):
    server, url = start_http(binary, root)
    try:
        check("http: serves on loopback /mcp", url.startswith("http://127.0.0.1:") and url.endswith("/mcp"), url)
        async with Client(url, read_timeout_seconds=60) as client:
            await run_checks(client, root, "http")
        # Two agents on one server at once.
        async with Client(url, read_timeout_seconds=60) as first, Client(url, read_timeout_seconds=60) as second:
            a, b = await call(first, "search", {"query": "validate token", "k": 3}), \
                await call(second, "find_symbol", {"name": "validate_token"})
            check("http: two clients at once", locations(a) and len((b.structured_content or {}).get("definitions", [])) == 1,
                  text_of(a)[:100] + text_of(b)[:100])
        # A legacy (session) client ends its session with DELETE on exit; the SDK warns when the
        # answer is not 200/204, as every agent built on it would show its user.
        warnings = Warnings()
        logging.getLogger("mcp").addHandler(warnings)
        try:
            async with Client(url, read_timeout_seconds=60, mode="legacy") as client:
                result = await call(client, "find_symbol", {"name": "validate_token"})
                check(f"http: legacy session handshake ({client.protocol_version})", not result.is_error,
                      text_of(result)[:200])
        finally:
            logging.getLogger("mcp").removeHandler(warnings)
        check("http: the SDK ends its session without a warning", not warnings.messages, warnings.messages)
        session_end_checks(url)
        other_path = url[: -len("/mcp")] + "/other"
        check("http: other paths are 404", http_status(other_path) == 404)
        refused = http_status(url, {"Origin": "http://evil.example"})
        check("http: a browser Origin is refused", refused in (400, 403), f"status {refused}")
    finally:
        code = stop(server, signal.SIGTERM)
        check("http: SIGTERM ends the server cleanly", code == 0, f"exit {code}")
    # Ctrl-C in the terminal that started it: SIGINT ends it cleanly too.
    server, url = start_http(binary, root)
    code = stop(server, signal.SIGINT)
    check("http: SIGINT (Ctrl-C) ends the server cleanly", code == 0, f"exit {code}")
    outside = subprocess.run([binary, "mcp", "--http", "0.0.0.0:0", root], capture_output=True, text=True, timeout=60)
    check("http: non-loopback address refused", outside.returncode == 2 and "loopback" in outside.stderr,
          f"exit {outside.returncode}: {outside.stderr[-300:]}")


async def run_checks(client, root, transport):
    global phase
    phase = transport
    # initialize
    info = client.server_info
    check("initialize: server info", info is not None and info.name == "raggrep", repr(info))
    check("initialize: tools capability", client.server_capabilities.tools is not None)
    print(f"     protocol version {client.protocol_version}")

    # tools/list: every tool present, every argument documented
    tools = (await client.list_tools()).tools
    names = {t.name for t in tools}
    check("tools/list: all tools", names == EXPECTED_TOOLS, repr(sorted(names)))
    for tool in tools:
        props = tool.input_schema.get("properties", {}) or {}
        undocumented = [p for p, s in props.items() if not s.get("description")]
        check(f"schema {tool.name}: described, every property documented",
              bool(tool.description) and not undocumented, f"undocumented: {undocumented}")

    # Wait for the first full index (queries answer before it, marked partial).
    started = time.monotonic()
    while True:
        status = (await call(client, "status", {})).structured_content
        if not status["partial"] and status["roots"] and status["roots"][0].get("chunks", 0) > 0:
            break
        if time.monotonic() - started > 180:
            break
        await anyio.sleep(0.2)
    numbers[f"{transport}: initial index (s)"] = round(time.monotonic() - started, 2)
    check("status: indexed, not partial", not status["partial"], repr(status)[:300])
    check("status: files counted", status["roots"][0].get("files", 0) >= 5, repr(status)[:300])

    # search
    latencies = []
    for _ in range(5):
        t = time.monotonic()
        result = await call(client, "search", {"query": "check whether an API token is still valid", "k": 5})
        latencies.append((time.monotonic() - t) * 1000)
    numbers[f"{transport}: search latency p50 over MCP (ms)"] = round(statistics.median(latencies), 1)
    sc = result.structured_content or {}
    hits = sc.get("results", [])
    top = hits[0] if hits else {}
    check("search: finds validate_token in src/auth.py first",
          top.get("symbol") == "validate_token" and top.get("location", "").startswith("src/auth.py:"), repr(hits[:2]))
    check("search: hit fields", all(k in top for k in ("location", "symbol", "kind", "score", "snippet", "stale")),
          repr(top))
    check("search: not stale, not partial", top.get("stale") is False and sc.get("partial") is False, repr(sc)[:200])
    check("search: token accounting", sc.get("tokens", 0) > 0 and sc.get("omitted") == 0, repr(sc)[:200])
    numbers[f"{transport}: tokens of a 5-hit search response"] = sc.get("tokens")

    small = (await call(client, "search", {"query": "token", "k": 10, "max_tokens": 150})).structured_content
    check("search: max_tokens leaves hits out and says so",
          small["omitted"] > 0 and small["tokens"] <= 150, repr(small)[:300])
    scoped = await call(client, "search", {"query": "configuration", "path": "web/**"})
    check("search: path glob", locations(scoped) and all(l.startswith("web/") for l in locations(scoped)),
          repr(locations(scoped)))
    py = await call(client, "search", {"query": "token", "lang": "python"})
    check("search: lang filter", locations(py) and all(".py:" in l for l in locations(py)), repr(locations(py)))
    lexical = await call(client, "search", {"query": "validate_token", "mode": "lexical", "k": 1})
    check("search: lexical mode", locations(lexical)[:1] and locations(lexical)[0].startswith("src/auth.py:"),
          repr(locations(lexical)))
    nulls = await call(client, "search", {"query": "token", "k": None, "mode": None, "path": None, "lang": None,
                                         "rerank": None})
    check("search: null for left-out arguments", not nulls.is_error and locations(nulls), text_of(nulls)[:200])
    reranked = (await call(client, "search", {"query": "check whether an API token is still valid", "k": 5,
                                              "rerank": True})).structured_content or {}
    check("search: rerank re-sorts with the reranker and says so",
          reranked.get("reranked_by") == "all-minilm-l6-v2-rerank-int8"
          and reranked["results"][0]["location"].startswith("src/auth.py:")
          and "reranked_by" not in sc, repr(reranked)[:300])
    nothing = (await call(client, "search", {"query": "render a 3d mesh with shadows", "k": 3})).structured_content or {}
    check("search: confidence, and no_confident_match when nothing here matches",
          reranked.get("no_confident_match") is False and 0.3 <= reranked.get("confidence", -1) <= 1
          and nothing.get("no_confident_match") is True and nothing.get("confidence", 1) < 0.3
          and nothing.get("results"), repr(nothing)[:300])
    # Hit scores are probabilities of being the answer, so min_score means the same in any query.
    likely = await call(client, "search", {"query": "check whether an API token is still valid", "k": 10,
                                           "min_score": 0.25})
    unlikely = await call(client, "search", {"query": "render a 3d mesh with shadows", "k": 3, "min_score": 0.25})
    check("search: min_score keeps only the likely answer, and nothing when nothing here matches",
          len(hits) > 1 and locations(likely) == [top.get("location")] and not unlikely.is_error
          and locations(unlikely) == [], repr((locations(likely), locations(unlikely), [h.get("score") for h in hits])))
    bad_rerank = await call(client, "search", {"query": "token", "mode": "lexical", "rerank": True})
    check("search: rerank outside hybrid mode is a tool error that says why",
          bad_rerank.is_error and "hybrid ranking only" in text_of(bad_rerank), text_of(bad_rerank)[:200])
    huge = await call(client, "search", {"query": "token", "k": 1_000_000})
    check("search: huge k is capped, not an error",
          not huge.is_error and "k_capped" in (huge.structured_content or {}), text_of(huge)[:200])

    # outline
    outline = await call(client, "outline", {"path": "src/auth.py"})
    defs = (outline.structured_content or {}).get("definitions", [])
    by_symbol = {d["symbol"]: d for d in defs}
    check("outline: validate_token with kind and lines",
          by_symbol.get("validate_token", {}).get("kind") == "function" and "-" in by_symbol["validate_token"]["lines"],
          repr(defs))
    check("outline: class and method", "TokenStore" in by_symbol and "TokenStore.issue" in by_symbol, repr(defs))

    # find_symbol
    found = (await call(client, "find_symbol", {"name": "validate_token"})).structured_content
    check("find_symbol: validate_token in src/auth.py",
          [d["location"].split(":")[0] for d in found["definitions"]] == ["src/auth.py"], repr(found))
    # A chunk that starts with the package line and imports: the jump goes to `func Serve`.
    serve = (await call(client, "find_symbol", {"name": "Serve"})).structured_content
    check("find_symbol: line is the definition's own (svc/server.go:9, its chunk starts at 1)",
          [(d["location"], d.get("line")) for d in serve["definitions"]] == [("svc/server.go:1-12", 9)], repr(serve))
    qualified = (await call(client, "find_symbol", {"name": "TokenStore.issue"})).structured_content
    check("find_symbol: qualified name", len(qualified["definitions"]) == 1, repr(qualified))
    none = await call(client, "find_symbol", {"name": "no_such_symbol_anywhere"})
    check("find_symbol: unknown name is an empty list", not none.is_error
          and none.structured_content["definitions"] == [], text_of(none)[:200])

    # context
    context = (await call(client, "context", {"question": "how are API tokens validated?", "max_tokens": 800}))
    cs = context.structured_content or {}
    check("context: citations and text", cs.get("sources") and "src/auth.py:" in cs.get("text", "")
          and 0 < cs.get("tokens", 0) <= 800 and cs.get("no_confident_match") is False, repr(cs)[:300])
    far = (await call(client, "context", {"question": "how do we render a 3d mesh with shadows?"})).structured_content or {}
    check("context: no_confident_match when nothing here is about the question",
          far.get("no_confident_match") is True and far.get("confidence", 1) < 0.3, repr(far)[:300])

    # find_similar by range and by snippet
    lines = by_symbol.get("validate_token", {}).get("lines", "1-1").split("-")
    start, end = int(lines[0]), int(lines[1])
    similar = await call(client, "find_similar", {"path": "src/auth.py", "start_line": start, "end_line": end, "k": 5})
    ss = similar.structured_content or {}
    source_excluded = all(not (l.startswith("src/auth.py:") and int(l.split(":")[1].split("-")[0]) <= end
                               and start <= int(l.split("-")[-1])) for l in locations(similar))
    check("find_similar: path range, source excluded",
          not similar.is_error and locations(similar) and source_excluded and ss.get("source", {}).get("location", "").startswith("src/auth.py:"),
          text_of(similar)[:300])
    snippet = await call(client, "find_similar", {"code": "def is_valid(tok):\n    return tok in TOKENS and not expired(tok)\n"})
    check("find_similar: snippet", not snippet.is_error and locations(snippet), text_of(snippet)[:300])

    # The audit log names the front door (counts only, never the query text).
    with open(os.path.join(root, ".raggrep", "audit.jsonl")) as f:
        audit = [json.loads(line) for line in f if line.strip()]
    searches = [e for e in audit if e.get("op") == "search" and e.get("door") == "mcp"]
    check("audit log: searches recorded with door mcp, without the query text",
          searches and not any("API token" in json.dumps(e) for e in audit), repr(audit[-2:])[:300])

    # reindex
    reindex = await call(client, "reindex", {})
    check("reindex: queued", (reindex.structured_content or {}).get("queued") == 1, text_of(reindex))

    # Bad arguments: tool errors with a clear message.
    await expect_error(client, "error: missing argument", "search", {}, "query")
    await expect_error(client, "error: wrong type", "search", {"query": "x", "k": "ten"})
    await expect_error(client, "error: min_score not a number", "search", {"query": "x", "min_score": "high"})
    await expect_error(client, "error: empty query", "search", {"query": "   "}, "empty")
    await expect_error(client, "error: k=0", "search", {"query": "x", "k": 0}, "k")
    await expect_error(client, "error: unknown mode", "search", {"query": "x", "mode": "fuzzy"})
    await expect_error(client, "error: unknown lang", "search", {"query": "x", "lang": "cobol"}, "language")
    await expect_error(client, "error: glob outside the roots", "search", {"query": "x", "path": "/etc/*"}, "outside")
    await expect_error(client, "error: glob with ..", "search", {"query": "x", "path": "../**"}, "..")
    await expect_error(client, "error: outline /etc/passwd", "outline", {"path": "/etc/passwd"}, "outside")
    await expect_error(client, "error: outline ../x", "outline", {"path": "../outside.py"}, "..")
    await expect_error(client, "error: symlink to outside", "outline", {"path": "escape.py"}, "symlink")
    await expect_error(client, "error: find_similar outside", "find_similar",
                       {"path": "/etc/passwd", "start_line": 1, "end_line": 2}, "outside")
    await expect_error(client, "error: find_similar without source", "find_similar", {"k": 3})
    await expect_error(client, "error: find_similar bad range", "find_similar",
                       {"path": "src/auth.py", "start_line": 9, "end_line": 2})
    await expect_error(client, "error: empty symbol name", "find_symbol", {"name": ""}, "empty")
    await expect_error(client, "error: context without question", "context", {})
    await expect_error(client, "error: outline missing file", "outline", {"path": "src/nope.py"}, "no such file")

    await vector_db_checks(client, root, transport)

    # Freshness: a file written on disk is found by the next searches, with no reindex call.
    name = f"compute_zebra_stripe_pattern_{transport}_7391"
    fresh = f"src/fresh_feature_{transport}.py"
    with open(os.path.join(root, fresh), "w") as f:
        f.write(f'def {name}(width):\n    """Stripes for a zebra of the given width."""\n    return ["#" * (i % 3) for i in range(width)]\n')
    written = time.monotonic()
    found_after = None
    while time.monotonic() - written < 10:
        result = await call(client, "search", {"query": name, "k": 3})
        if any(l.startswith(fresh + ":") for l in locations(result)):
            found_after = time.monotonic() - written
            break
        await anyio.sleep(0.05)
    numbers[f"{transport}: file write to searchable (s)"] = None if found_after is None else round(found_after, 2)
    check("freshness: new file searchable within 3 s, no reindex", found_after is not None and found_after < 3,
          f"found after {found_after}")
    symbol = (await call(client, "find_symbol", {"name": name})).structured_content
    check("freshness: new symbol found by find_symbol", len(symbol["definitions"]) == 1, repr(symbol))

    # stale: a write through mmap sends no modify event (inotify(7)), so while the writer keeps
    # the file open the index still holds the old text and the hit must say so. Closing the file
    # is the event the watcher takes; the next update makes the hit fresh again.
    async def fresh_hit():
        result = await call(client, "search", {"query": name, "k": 3})
        return next((h for h in (result.structured_content or {}).get("results", [])
                     if h["location"].startswith(fresh + ":")), None)
    with open(os.path.join(root, fresh), "r+b") as f:
        with mmap.mmap(f.fileno(), 0) as mapped:
            at = mapped.find(b"% 3")
            mapped[at:at + 3] = b"% 4"
            mapped.flush()
            await anyio.sleep(1.0)  # several debounce periods: no event reached the watcher
            hit = await fresh_hit()
            check("stale: a hit whose file changed unseen says stale: true", hit is not None and hit.get("stale") is True,
                  repr(hit))
    closed = time.monotonic()
    hit = await fresh_hit()
    while (hit is None or hit.get("stale") is not False) and time.monotonic() - closed < 10:
        await anyio.sleep(0.05)
        hit = await fresh_hit()
    check("stale: closing the written file updates the index, stale: false within 3 s",
          hit is not None and hit.get("stale") is False and time.monotonic() - closed < 3,
          f"{hit!r} after {time.monotonic() - closed:.2f} s")


def sqlite_rows(path):
    """The rows of a vector database as Python's sqlite3 sees them (no extension needed)."""
    import contextlib, sqlite3
    # Closed here, not when the garbage collector gets to it (a connection is in a reference
    # cycle): a file opened read-write closes with an inotify IN_CLOSE_WRITE at that moment.
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute("SELECT key, embedding_text, value, hex(embedding) FROM vector_store ORDER BY rowid").fetchall()


async def vector_db_checks(client, root, transport):
    """The vector_db tool: every action as the seed's examples call it, and its errors."""
    vdb = lambda args: call(client, "vector_db", args)
    sc = lambda result: result.structured_content or {}
    # Each transport gets a database of its own (set_database is remembered per workspace).
    chosen = os.path.join(root, f"vectors-{transport}.sqlite")
    switched = await vdb({"action": "set_database", "filename": f"vectors-{transport}.sqlite"})
    check("vector_db: set_database", not switched.is_error and sc(switched).get("database") == chosen
          and sc(switched).get("rows") == 0, text_of(switched)[:300])
    with open(os.path.join(root, ".raggrep", "vectordb.path")) as f:
        check("vector_db: set_database remembered", f.read().strip() == chosen)
    stored = await vdb({"action": "store", "embedding_text": "apple computer", "value": "fruit company / hardware vendor"})
    key = sc(stored).get("key", "")
    check("vector_db: store returns a UUID key", not stored.is_error and len(key) == 36 and key.count("-") == 4,
          text_of(stored)[:300])
    await vdb({"action": "store", "embedding_text": "banana bread baking instructions", "value": "recipe"})
    again = await vdb({"action": "store", "embedding_text": "apple computer", "value": "hardware vendor"})
    check("vector_db: same text again keeps the key", sc(again).get("key") == key and sc(again).get("updated") is True,
          text_of(again)[:300])
    got = await vdb({"action": "retrieve", "key": key})
    check("vector_db: retrieve", sc(got).get("value") == "hardware vendor" and sc(got).get("found") is True,
          text_of(got)[:300])
    listed = await vdb({"action": "list", "limit": 10})
    rows = sc(listed).get("rows", [])
    check("vector_db: list rows with 384-d embeddings",
          len(rows) == 2 and all(set(r) == {"key", "embedding_text", "value", "embedding"} and len(r["embedding"]) == 384
                                 for r in rows), text_of(listed)[:300])
    page = await vdb({"action": "list", "limit": 1, "offset": 1})
    check("vector_db: list limit/offset", [r["value"] for r in sc(page).get("rows", [])] == ["recipe"], text_of(page)[:300])
    # The same rows (the text writes each float as f32, the structured content as JSON numbers).
    seed_rows = json.loads(text_of(listed))
    check("vector_db: list's text is the seed's array (what the model reads)",
          isinstance(seed_rows, list)
          and [(r["key"], r["embedding_text"], r["value"]) for r in seed_rows] == [(r["key"], r["embedding_text"], r["value"]) for r in rows]
          and all(max(abs(a - b) for a, b in zip(t["embedding"], r["embedding"])) < 1e-6 for t, r in zip(seed_rows, rows)),
          text_of(listed)[:300])
    found = await vdb({"action": "search", "query": "a company that sells laptops", "topK": 2})
    results = sc(found).get("results", [])
    check("vector_db: search finds the closest first, scores ascending",
          [r["key"] for r in results][:1] == [key] and len(results) == 2 and results[0]["score"] <= results[1]["score"],
          text_of(found)[:300])
    check("vector_db: search's text is the seed's array of {key, embedding_text, value, score}",
          json.loads(text_of(found)) == results
          and all(set(r) == {"key", "embedding_text", "value", "score"} for r in results), text_of(found)[:300])
    default = await vdb({"action": "search", "query": "anything at all"})
    check("vector_db: topK defaults to 5 (all 2 rows here)", len(json.loads(text_of(default))) == 2, text_of(default)[:300])
    with open(os.path.join(root, "notes.txt"), "w") as f:
        f.write("Deployment checklist: bump the version, tag the release, publish the wheel.\n")
    imported = await vdb({"action": "import_file", "filepath": "notes.txt"})
    check("vector_db: import_file stores the path as value",
          not imported.is_error and sc(imported).get("path") == os.path.join(root, "notes.txt"), text_of(imported)[:300])
    hit = await vdb({"action": "search", "query": "how do I release a new version", "topK": 1})
    check("vector_db: imported file is searchable",
          [r["value"] for r in sc(hit).get("results", [])] == [os.path.join(root, "notes.txt")], text_of(hit)[:300])

    # Errors: a tool error with one line, and the database unchanged.
    before = sqlite_rows(chosen)
    with open(os.path.join(root, "empty.txt"), "w"):
        pass
    with open(os.path.join(root, "blob.bin"), "wb") as f:
        f.write(b"\x00\x01\x02binary\xff")
    await expect_error(client, "vector_db error: unknown action", "vector_db", {"action": "upsert"}, "unknown action")
    failed_call = await vdb({"action": "retrieve", "key": "not-a-uuid"})
    check("vector_db error: the wire error body as structured content",
          failed_call.is_error and sc(failed_call).get("error") == text_of(failed_call)
          and "not a UUID" in text_of(failed_call), repr(failed_call)[:300])
    await expect_error(client, "vector_db error: store without value", "vector_db",
                       {"action": "store", "embedding_text": "x"}, "value")
    await expect_error(client, "vector_db error: key not a UUID", "vector_db", {"action": "retrieve", "key": "42"}, "UUID")
    await expect_error(client, "vector_db error: delete without key", "vector_db", {"action": "delete"}, "key")
    await expect_error(client, "vector_db error: missing file", "vector_db",
                       {"action": "import_file", "filepath": "nope.txt"}, "no such file")
    await expect_error(client, "vector_db error: empty file", "vector_db",
                       {"action": "import_file", "filepath": "empty.txt"}, "empty")
    await expect_error(client, "vector_db error: binary file", "vector_db",
                       {"action": "import_file", "filepath": "blob.bin"}, "binary")
    await expect_error(client, "vector_db error: directory", "vector_db",
                       {"action": "import_file", "filepath": "src"}, "directory")
    await expect_error(client, "vector_db error: file outside the workspace", "vector_db",
                       {"action": "import_file", "filepath": "/etc/hostname"}, "outside")
    await expect_error(client, "vector_db error: search topK 0", "vector_db",
                       {"action": "search", "query": "x", "topK": 0}, "topK")
    await expect_error(client, "vector_db error: database in a missing directory", "vector_db",
                       {"action": "set_database", "filename": "no/such/dir/v.sqlite"}, "does not exist")
    await expect_error(client, "vector_db error: database outside the workspace", "vector_db",
                       {"action": "set_database", "filename": "/tmp/raggrep-outside.sqlite"}, "outside")
    await expect_error(client, "vector_db error: database path with ..", "vector_db",
                       {"action": "set_database", "filename": "../escape.sqlite"}, "..")
    check("vector_db: no database was created outside the workspace",
          not os.path.exists("/tmp/raggrep-outside.sqlite") and not os.path.exists(os.path.join(root, "..", "escape.sqlite")))
    check("vector_db: errors left the database unchanged", sqlite_rows(chosen) == before)
    with open(os.path.join(root, ".raggrep", "vectordb.path")) as f:
        check("vector_db: a failed set_database keeps the choice", f.read().strip() == chosen)

    deleted = await vdb({"action": "delete", "key": key})
    check("vector_db: delete returns the key", sc(deleted).get("key") == key and sc(deleted).get("deleted") is True,
          text_of(deleted)[:300])
    absent = await vdb({"action": "delete", "key": key})
    check("vector_db: delete of an absent key warns", not absent.is_error and sc(absent).get("deleted") is False
          and "no row" in sc(absent).get("warning", ""), text_of(absent)[:300])


def entry():
    binary, fixture = sys.argv[1], sys.argv[2]
    try:
        anyio.run(lambda: _with_timeout(binary, fixture))
    except Exception:
        traceback.print_exc()
        check("session completed", False)
    for key, value in numbers.items():
        print(f"     {key}: {value}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


async def _with_timeout(binary, fixture):
    with anyio.fail_after(600):
        await main(binary, fixture)


if __name__ == "__main__":
    entry()
