"""Many MCP clients at once against `raggrep mcp --http` on loopback: calls, errors, latency and the
server's memory and file descriptors over the run.

Usage (the SDK's venv; benches/mcp_http_load.sh finds or makes it):
  python benches/mcp_http_load.py RAGGREP_BIN TREE [--clients N] [--seconds S] [--session-calls C]

Each client is the official MCP Python SDK (`Client(url, mode="legacy")`: a session per
connection, ended with DELETE on exit, as agents built on it do) calling `search` in a loop; it
ends its session and opens a new one every C calls, so sessions come and go during the run. The
server indexes TREE first (in place, `.raggrep/`); the clock starts once its status says done.

Prints calls, errors, sessions, p50/p99 client-side latency, throughput, and the server's RSS and
open file descriptors sampled every half second (start, peak, end). Bounded on purpose: at most
256 clients and 600 s, loopback only. Ends with "N passed, M failed" over what must hold whatever
the machine: calls were made, none failed, the SDK warned about nothing (a session end it did not
accept is a warning), the server is still up, and its descriptors went back down once the
clients left. No timing is asserted.
"""

import argparse
import logging
import os
import platform
import signal
import statistics
import subprocess
import sys
import time

import anyio
from mcp import Client

# The SDK test's way of starting `raggrep mcp --http` and reading its address: one copy.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "mcp"))
from test_sdk import Warnings, start_http  # noqa: E402

QUERIES = [
    "check whether an API token is still valid",
    "retry an HTTP request with backoff",
    "parse the configuration file",
    "how are sessions stored",
    "where is the user looked up by id",
    "format an error for the log",
    "open a database connection",
    "validate_token",
]
MAX_CLIENTS = 256
MAX_SECONDS = 600

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


def pct(values, f):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(f * (len(ordered) - 1))))]


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return " ".join(f for f in ("avx2", "avx512f", "avx512_vnni", "avx_vnni") if f in flags) or "none"
    except OSError:
        pass
    return "unknown"


async def wait_indexed(url, concurrency):
    async with Client(url, read_timeout_seconds=3600) as client:
        while True:
            status = (await client.call_tool("status", {})).structured_content or {}
            roots = status.get("roots") or [{}]
            r = roots[0]
            if not status.get("partial") and not r.get("indexing") and r.get("pending", 1) == 0 and r.get("chunks", 0) > 0:
                # Warm up as many searches at once as there will be clients, so the start figures
                # include the model's working memory and only growth under load shows as such.
                async with anyio.create_task_group() as group:
                    for query in QUERIES[:concurrency]:
                        group.start_soon(client.call_tool, "search", {"query": query, "k": 5})
                return r
            await anyio.sleep(0.5)


async def one_client(url, number, deadline, session_calls, stats):
    i = number
    while time.monotonic() < deadline:
        try:
            async with Client(url, read_timeout_seconds=60, mode="legacy") as client:
                stats["sessions"] += 1
                for _ in range(session_calls):
                    if time.monotonic() >= deadline:
                        break
                    query = QUERIES[i % len(QUERIES)]
                    i += 1
                    started = time.perf_counter()
                    try:
                        result = await client.call_tool("search", {"query": query, "k": 5})
                    except Exception as err:  # a transport or protocol failure: counted, the loop goes on
                        stats["errors"].append(f"{type(err).__name__}: {err}")
                        continue
                    if result.is_error:
                        stats["errors"].append(" ".join(getattr(c, "text", "") for c in result.content)[:200])
                    else:
                        stats["latencies"].append((time.perf_counter() - started) * 1000)
        except Exception as err:  # the session could not open or close
            stats["errors"].append(f"session: {type(err).__name__}: {err}")
            await anyio.sleep(0.1)


async def sample(pid, samples, done):
    while not done.is_set():
        try:
            samples.append((rss_mb(pid), open_fds(pid)))
        except OSError:
            return
        with anyio.move_on_after(0.5):
            await done.wait()


async def run(url, pid, clients, seconds, session_calls):
    stats = {"latencies": [], "errors": [], "sessions": 0}
    samples = []
    done = anyio.Event()
    deadline = time.monotonic() + seconds
    started = time.monotonic()
    async with anyio.create_task_group() as outer:
        outer.start_soon(sample, pid, samples, done)
        async with anyio.create_task_group() as group:
            for n in range(clients):
                group.start_soon(one_client, url, n, deadline, session_calls, stats)
        done.set()
    return stats, samples, time.monotonic() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary")
    parser.add_argument("tree")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--session-calls", type=int, default=50, help="calls per session before it is ended")
    args = parser.parse_args()
    if not 1 <= args.clients <= MAX_CLIENTS or not 0 < args.seconds <= MAX_SECONDS or args.session_calls < 1:
        parser.error(f"--clients 1..{MAX_CLIENTS}, --seconds up to {MAX_SECONDS}, --session-calls at least 1")

    warnings = Warnings()
    logging.getLogger("mcp").addHandler(warnings)
    server, url = start_http(args.binary, os.path.realpath(args.tree))
    try:
        root = anyio.run(wait_indexed, url, min(args.clients, len(QUERIES)))
        time.sleep(1)
        before = (rss_mb(server.pid), open_fds(server.pid))
        stats, samples, elapsed = anyio.run(run, url, server.pid, args.clients, args.seconds, args.session_calls)
        # The clients have closed their connections: give the server a moment to close its ends.
        settle = time.monotonic() + 5
        after = (rss_mb(server.pid), open_fds(server.pid))
        while after[1] > before[1] + 4 and time.monotonic() < settle:
            time.sleep(0.25)
            after = (rss_mb(server.pid), open_fds(server.pid))
        alive = server.poll() is None
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()

    latencies = stats["latencies"]
    calls = len(latencies) + len(stats["errors"])
    print(f"MCP over HTTP under load: {args.clients} clients for {args.seconds:g} s, a new session every "
          f"{args.session_calls} calls; tree {root.get('files')} files, {root.get('chunks')} chunks; "
          f"{os.cpu_count()} cores, {platform.machine()}, CPU flags: {cpu_flags()}")
    if latencies:
        print(f"calls {calls}  errors {len(stats['errors'])}  sessions {stats['sessions']}  "
              f"p50 {statistics.median(latencies):.0f} ms  p99 {pct(latencies, 0.99):.0f} ms  "
              f"throughput {len(latencies) / elapsed:.0f}/s")
    else:
        print(f"calls {calls}  errors {len(stats['errors'])}  sessions {stats['sessions']}")
    rss = [s[0] for s in samples] or [before[0]]
    fds = [s[1] for s in samples] or [before[1]]
    print(f"server RSS MB: start {before[0]:.0f}, peak {max(rss):.0f}, end {after[0]:.0f}; "
          f"open fds: start {before[1]}, peak {max(fds)}, end {after[1]}")
    for message in stats["errors"][:5]:
        print(f"  error: {message}")
    check("calls were made", len(latencies) > 0)
    check("no call failed", not stats["errors"], f"{len(stats['errors'])} errors")
    check("the SDK warned about nothing (sessions ended as it expects)", not warnings.messages, warnings.messages[:3])
    check("the server is still up", alive)
    check("its descriptors went back down", after[1] <= before[1] + 4, f"{before[1]} -> {after[1]}")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
