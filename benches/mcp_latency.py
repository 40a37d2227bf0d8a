"""Latency of raggrep's MCP tools as an agent sees it: the official Python SDK over stdio against
`raggrep mcp ROOT` on a real tree, after its index is complete.

Usage (the SDK's venv from tests/mcp/run.sh):
  ~/.cache/raggrep/tools/mcp-venv/bin/python benches/mcp_latency.py RAGGREP_BIN ROOT [--rounds N]

Prints p50/p95 per tool (search, context, outline, find_symbol) in milliseconds, client-side
(request sent to response parsed), the tokens of a default search response, and the time from a
file written on disk to its first search hit.
"""

import os
import statistics
import sys
import time

import anyio
from mcp import Client, StdioServerParameters

QUERIES = [
    "open an index directory and read its meta file",
    "merge segments in the background",
    "tokenize text into lowercase terms",
    "compute the BM25 score of a term",
    "serialize a document to bytes",
    "collect the top k documents by score",
    "parse a query string into a boolean query",
    "delete documents matching a term",
    "commit pending changes and write a new generation",
    "read a posting list with skip information",
]


def pct(values, f):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(f * (len(ordered) - 1))))]


async def timed(client, tool, arguments):
    started = time.perf_counter()
    result = await client.call_tool(tool, arguments)
    elapsed = (time.perf_counter() - started) * 1000
    if result.is_error:
        raise RuntimeError(f"{tool} {arguments}: {result.content}")
    return elapsed, result.structured_content or {}


async def main(binary, root, rounds):
    params = StdioServerParameters(command=binary, args=["mcp", root], env={"RAGGREP_LOG": "warn"})
    async with Client(params, read_timeout_seconds=3600) as client:
        started = time.monotonic()
        while True:
            status = (await client.call_tool("status", {})).structured_content
            r = status["roots"][0]
            if not r.get("indexing") and r.get("pending", 1) == 0 and r.get("chunks", 0) > 0:
                break
            await anyio.sleep(1)
        print(f"index ready after {time.monotonic() - started:.0f} s: {r['files']} files, {r['chunks']} chunks")
        outline_paths = []
        search_tokens = []
        samples = {"search": [], "context": [], "outline": [], "find_symbol": []}
        symbols = []
        for _ in range(rounds):
            for query in QUERIES:
                ms, answer = await timed(client, "search", {"query": query})
                samples["search"].append(ms)
                search_tokens.append(answer.get("tokens", 0))
                for hit in answer.get("results", []):
                    path = hit["location"].split(":")[0]
                    if path not in outline_paths:
                        outline_paths.append(path)
                    if hit.get("symbol") and hit["symbol"] not in symbols:
                        symbols.append(hit["symbol"])
                ms, _ = await timed(client, "context", {"question": query, "max_tokens": 2000})
                samples["context"].append(ms)
        for path in outline_paths[: 10 * rounds]:
            ms, _ = await timed(client, "outline", {"path": path})
            samples["outline"].append(ms)
        for symbol in symbols[: 10 * rounds]:
            ms, _ = await timed(client, "find_symbol", {"name": symbol})
            samples["find_symbol"].append(ms)
        print("| tool | calls | p50 ms | p95 ms |")
        print("|---|---:|---:|---:|")
        for tool, values in samples.items():
            print(f"| {tool} | {len(values)} | {pct(values, 0.5):.1f} | {pct(values, 0.95):.1f} |")
        print(f"default search response (k 10, budget 2000): median {statistics.median(search_tokens):.0f} tokens")

        name = "zebra_stripes_latency_probe_4242"
        probe = os.path.join(root, f"{name}.rs")
        with open(probe, "w") as f:
            f.write(f"/// Paint zebra stripes.\npub fn {name}(width: usize) -> usize {{ width * 3 }}\n")
        written = time.monotonic()
        try:
            while time.monotonic() - written < 30:
                _, answer = await timed(client, "search", {"query": name, "k": 3})
                if any(h["location"].startswith(f"{name}.rs:") for h in answer.get("results", [])):
                    print(f"file write to searchable: {time.monotonic() - written:.2f} s")
                    break
                await anyio.sleep(0.05)
            else:
                print("file write to searchable: not within 30 s")
        finally:
            os.remove(probe)


if __name__ == "__main__":
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 3
    anyio.run(main, sys.argv[1], os.path.realpath(sys.argv[2]), rounds)
