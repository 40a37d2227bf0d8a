"""Drives `raggrep lsp` over stdio, as an editor would: open ROOT with SETTINGS (JSON
initializationOptions), wait for the index, run raggrep.search (k 5) for each QUERY and print
each answer as one JSON line. The server inherits this process's environment; its stderr goes to
STDERR_FILE (tests check it, e.g. for passwords).

Usage: lsp_search.py BIN ROOT SETTINGS STDERR_FILE QUERY…
A QUERY that starts with `{` is the command's whole argument object (e.g. with `lang`, `path`).
Used by tests/pg/run.sh (the team setting) and tests/install/run.sh (the bundle's server)."""
import json
import os
import subprocess
import sys
import time

binary, root, settings, stderr_file, *queries = sys.argv[1:]
with open(stderr_file, "wb") as err:
    proc = subprocess.Popen([binary, "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)


def send(message):
    body = json.dumps(message).encode()
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()


def read():
    length = 0
    while True:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit("the server closed stdout")
        if line in (b"\r\n", b"\n"):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(proc.stdout.read(length))


def wait(pred, seconds=120):
    deadline = time.time() + seconds
    while time.time() < deadline:
        message = read()
        if message.get("method") and "id" in message:
            send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        if pred(message):
            return message
    raise SystemExit("timed out")


uri = "file://" + os.path.realpath(root)
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "processId": os.getpid(), "rootUri": uri, "workspaceFolders": [{"uri": uri, "name": "root"}],
    "capabilities": {}, "initializationOptions": json.loads(settings)}})
wait(lambda m: m.get("id") == 1)
send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
wait(lambda m: m.get("method") == "raggrep/indexUpdated")
for n, query in enumerate(queries, start=2):
    send({"jsonrpc": "2.0", "id": n, "method": "workspace/executeCommand",
          "params": {"command": "raggrep.search",
                     "arguments": [json.loads(query) if query.startswith("{") else {"query": query, "k": 5}]}})
    answer = wait(lambda m: m.get("id") == n)
    if "error" in answer:
        raise SystemExit("raggrep.search failed: %s" % answer["error"])
    print(json.dumps(answer["result"]), flush=True)
send({"jsonrpc": "2.0", "id": 999, "method": "shutdown"})
wait(lambda m: m.get("id") == 999)
send({"jsonrpc": "2.0", "method": "exit"})
sys.exit(proc.wait(timeout=30))
