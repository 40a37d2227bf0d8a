#!/usr/bin/env bash
# `raggrep ask` against a real LLM server on loopback: llama.cpp's llama-server (built from the
# llama.cpp vendored in the crates.io crate llama-cpp-sys-2, see llama_server.sh) serving
# SmolLM2-135M-Instruct. Asserts on the protocol and the sources, never on a 135M model's
# wording. Last line: "N passed, M failed".
#
# Env: RAGGREP_BIN (default target/debug/raggrep), RAGGREP_HOME (caches; default ~/.cache/raggrep).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
repo="$PWD"
bin="${RAGGREP_BIN:-$repo/target/debug/raggrep}"
passed=0
failed=0
ok() { passed=$((passed + 1)); printf 'ok    %s\n' "$1"; }
fail() { failed=$((failed + 1)); printf 'FAIL  %s\n' "$1"; [[ -n "${2:-}" ]] && printf '      %s\n' "${2:0:2000}"; }
check() { local name="$1"; shift; if "$@"; then ok "$name"; else fail "$name" "${detail:-}"; fi; }
finish() { echo "$passed passed, $failed failed"; [[ $failed -eq 0 ]]; exit $?; }

echo "==> llama-server (built once, cached)" >&2
if ! bash tests/ask/llama_server.sh install; then
  fail "llama-server builds from llama-cpp-sys-2's vendored llama.cpp"
  finish
fi

work="$(mktemp -d)"
server_pid=""
cleanup() {
  [[ -n "$server_pid" ]] && bash tests/ask/llama_server.sh stop "$server_pid" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
key="raggrep-test-key-$RANDOM"
if ! server_pid="$(bash tests/ask/llama_server.sh start "$port" --api-key "$key")"; then
  fail "llama-server starts on 127.0.0.1:$port"
  finish
fi
url="http://127.0.0.1:$port/v1"
ok "llama-server serves SmolLM2 on $url"

cp -r tests/fixtures/polyglot "$work/ws"
# No setting of the developer's leaks in.
export XDG_CONFIG_HOME="$work/config"
unset RAGGREP_LLM_URL RAGGREP_LLM_MODEL RAGGREP_LLM_API_KEY
cd "$work/ws"
"$bin" index . >/dev/null 2>&1 || { fail "index the fixture"; finish; }

question="where do we check that an API token has not expired?"
expected="src/auth.py:19-25"

# 1. The server wants a key: without it, one line naming the status and the variable.
"$bin" ask "$question" --budget 400 --llm-url "$url" >"$work/out" 2>"$work/err"
rc=$?
detail="rc=$rc $(cat "$work/err")"
check "no API key: exit 2, one line with the server's 401 and where the key goes" \
  bash -c "[[ $rc -eq 2 ]] && tail -n 1 '$work/err' | grep -q 'answered 401 Unauthorized' && tail -n 1 '$work/err' | grep -q RAGGREP_LLM_API_KEY"

RAGGREP_LLM_API_KEY=not-the-key "$bin" ask "$question" --budget 400 --llm-url "$url" >"$work/out" 2>"$work/err"
rc=$?
detail="rc=$rc $(cat "$work/err")"
check "a wrong API key: exit 2, the key was refused (and the key itself is not printed)" \
  bash -c "[[ $rc -eq 2 ]] && grep -q 'the key in RAGGREP_LLM_API_KEY was refused' '$work/err' && ! grep -q not-the-key '$work/err'"

# 2. The answer streams to the terminal, then the sources; the key comes from the environment.
export RAGGREP_LLM_API_KEY="$key"
start=$(date +%s.%N)
"$bin" ask "$question" --budget 400 --llm-url "$url" >"$work/out" 2>"$work/err"
rc=$?
end=$(date +%s.%N)
seconds=$(python3 -c "print(f'{$end - $start:.2f}')")
echo "      one ask end to end (index loaded, query embedded, answer generated): ${seconds} s" >&2
detail="rc=$rc stdout: $(cat "$work/out") stderr: $(cat "$work/err")"
sed 's/^/      | /' "$work/out" "$work/err" >&2
check "text answer: exit 0, the route, the answer, then the sources with the expected one" \
  bash -c "[[ $rc -eq 0 ]] && grep -q '^route: retrieval' '$work/err' && grep -q '^answered in' '$work/err' \
    && grep -q '^Sources ([0-9]* given to ' '$work/out' && grep -q '$expected' '$work/out' \
    && [[ \$(sed -n '/^Sources (/q;p' '$work/out' | tr -d '[:space:]' | wc -c) -gt 0 ]]"

# 3. --json: the protocol's facts (model, finish reason, timings) and the same sources the prompt holds.
"$bin" ask --json "$question" --budget 400 --llm-url "$url" >"$work/answer.json" 2>"$work/err"
"$bin" ask --json --prompt "$question" --budget 400 >"$work/prompt.json" 2>>"$work/err"
models="$(curl -s -H "Authorization: Bearer $key" "$url/models")"
detail="$(cat "$work/answer.json") | $(cat "$work/err") | models: $models"
check "--json: answer, the server's model, finish_reason, first_token_ms, sources = the prompt's" \
  python3 - "$work/answer.json" "$work/prompt.json" "$models" "$expected" <<'EOF'
import json, sys
answer = json.load(open(sys.argv[1]))
prompt = json.load(open(sys.argv[2]))
served = [m["id"] for m in json.loads(sys.argv[3])["data"]]
assert answer["route"] == "retrieval", answer
assert isinstance(answer["answer"], str) and answer["answer"].strip(), answer
assert answer["model"] in served, (answer["model"], served)
assert answer["finish_reason"] in ("stop", "length"), answer
assert 0 < answer["first_token_ms"] <= answer["took_ms"], answer
assert [s["location"] for s in answer["sources"]] == [s["location"] for s in prompt["sources"]], (answer, prompt)
assert sys.argv[4] in [s["location"] for s in answer["sources"]], answer
assert all(isinstance(s["cited"], bool) for s in answer["sources"]), answer
assert answer["prompt_tokens"] == prompt["prompt_tokens"], (answer, prompt)
EOF

# 4. The answer arrives in pieces as the server generates it (streaming), not all at the end.
detail=""
check "the answer streams: several writes reach stdout before the sources" \
  python3 - "$bin" "$question" "$url" <<'EOF'
import os, subprocess, sys, time
proc = subprocess.Popen([sys.argv[1], "ask", sys.argv[2], "--budget", "400", "--llm-url", sys.argv[3], "--max-tokens", "120"],
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
reads, seen = [], b""
while True:
    data = os.read(proc.stdout.fileno(), 65536)
    if not data:
        break
    reads.append(time.monotonic())
    seen += data
    if b"\nSources (" in seen:
        break
proc.wait(timeout=120)
before = seen.split(b"\nSources (")[0]
assert proc.returncode == 0, proc.returncode
assert len(reads) >= 3 and before.strip(), (len(reads), seen[:300])
assert reads[-1] - reads[0] > 0.05, reads
EOF

# 5. --max-tokens cuts the answer, and the output says so.
"$bin" ask "$question" --budget 400 --llm-url "$url" --max-tokens 4 >"$work/out" 2>"$work/err"
rc=$?
"$bin" ask --json "$question" --budget 400 --llm-url "$url" --max-tokens 4 >"$work/cut.json" 2>>"$work/err"
detail="rc=$rc $(cat "$work/out") $(cat "$work/cut.json") $(cat "$work/err")"
check "--max-tokens 4: finish_reason length, and the text says the answer was cut" \
  bash -c "[[ $rc -eq 0 ]] && grep -q '^\[answer cut at --max-tokens 4\]' '$work/out' \
    && python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); assert a[\"finish_reason\"]==\"length\", a' '$work/cut.json'"

# 6. Everything from the config file: URL, model, and the variable holding the key.
mkdir -p "$XDG_CONFIG_HOME/raggrep"
printf '[llm]\nurl = "%s"\nmodel = "smollm2"\napi_key_env = "MY_LLM_KEY"\n' "$url" >"$XDG_CONFIG_HOME/raggrep/config.toml"
MY_LLM_KEY="$key" RAGGREP_LLM_API_KEY="" "$bin" ask --json "$question" --budget 400 --llm-timeout 60 >"$work/config.json" 2>"$work/err"
rc=$?
detail="rc=$rc $(cat "$work/config.json") $(cat "$work/err")"
check "user config [llm]: url, model and api_key_env are used (no flags), --llm-timeout accepted" \
  bash -c "[[ $rc -eq 0 ]] && python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); assert a[\"answer\"].strip(), a' '$work/config.json'"
RAGGREP_LLM_API_KEY="" "$bin" ask "$question" --budget 400 >"$work/out" 2>"$work/err"
detail="$(cat "$work/err")"
check "a 401 names the variable the config says holds the key" grep -q 'set the API key in MY_LLM_KEY' "$work/err"
rm -f "$XDG_CONFIG_HOME/raggrep/config.toml"
"$bin" ask --json "$question" --budget 400 --llm-model smollm2 --llm-url "$url" >"$work/model.json" 2>"$work/err"
rc=$?
detail="rc=$rc $(cat "$work/model.json") $(cat "$work/err")"
check "--llm-model names the model to ask for" bash -c "[[ $rc -eq 0 ]]"

# 7. Structural questions are answered exactly; the LLM is not needed for them.
"$bin" ask "where is \`validate_token\` defined?" --llm-url "$url" >"$work/out" 2>"$work/err"
rc=$?
detail="rc=$rc $(cat "$work/out") $(cat "$work/err")"
check "a structural question takes the exact route even with an LLM configured" \
  bash -c "[[ $rc -eq 0 ]] && grep -q '$expected  function validate_token' '$work/out' && ! grep -q '^Sources' '$work/out'"

# 8. The server dies mid-answer: one line saying the answer stopped, exit 2. The kill waits for
# the first streamed text (up to 60 s), and the previous step's output is removed first: the
# background ask truncates it only once it starts, and on a loaded machine the wait below saw the
# old text, killed the server at once and tested "no server" instead.
rm -f "$work/out"
"$bin" ask "$question" --budget 400 --llm-url "$url" --max-tokens 400 >"$work/out" 2>"$work/err" &
ask_pid=$!
for _ in $(seq 1 1200); do [[ -s "$work/out" ]] && break; sleep 0.05; done
kill -9 "$server_pid" 2>/dev/null
server_pid=""
wait "$ask_pid"
rc=$?
detail="rc=$rc $(cat "$work/err")"
check "server killed mid-answer: exit 2, one line saying the answer stopped or the server went away" \
  bash -c "[[ $rc -eq 2 ]] && tail -n 1 '$work/err' | grep -Eq '^raggrep: the LLM server at .* stopped mid-answer'"

finish
