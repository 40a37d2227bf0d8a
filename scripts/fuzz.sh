#!/usr/bin/env bash
# Fuzzes raggrep's input decoders with cargo-fuzz (libFuzzer): every target in fuzz/fuzz_targets
# for SECONDS each (default 60), starting from the seeds in fuzz/corpus/<target>/.
#
#   bash scripts/fuzz.sh [--quick] [SECONDS]
#
# --quick builds without optimisation (what scripts/test.sh runs): 6 min from nothing on 2 cores.
# A release fuzz build optimises every crate as one codegen unit; from nothing it was not timed,
# but an opt-level 1 build took 19 min and the raggrep crate alone takes 8 in release. Each target
# runs 7 to 100 times fewer inputs a second unoptimised: enough to replay the seeds and explore a
# little on every run; a real search for bugs is a long run without it.
#
# cargo-fuzz is installed once into $RAGGREP_HOME/tools/cargo-fuzz (default ~/.cache/raggrep);
# the nightly toolchain must be there (`rustup toolchain install nightly`). Runs start from a
# temporary copy of the seeds, so nothing the fuzzer finds is added to the repository; a crash
# is saved under fuzz/artifacts/<target>/ (ignored by git) and makes the script fail.
#
# Builds take /tmp/raggrep-cargo.lock (flock) so they never overlap other cargo runs on a shared
# machine; set RAGGREP_CARGO_LOCK to another file, or to nothing to skip locking (needed when
# the caller already holds that lock). The last line is "N passed, M failed" (targets), as
# scripts/test.sh expects.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

profile=release
if [[ "${1:-}" == "--quick" ]]; then
  profile=debug
  shift
fi
seconds="${1:-60}"
[[ "$seconds" =~ ^[0-9]+$ && $# -le 1 ]] || { echo "usage: scripts/fuzz.sh [--quick] [SECONDS]" >&2; exit 2; }
export RAGGREP_HOME="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
tools="$RAGGREP_HOME/tools/cargo-fuzz"
lock="${RAGGREP_CARGO_LOCK-/tmp/raggrep-cargo.lock}"
locked() {
  # -o: the command's children do not inherit the lock (a stray long-lived child would hold it).
  if [[ -n "$lock" ]] && command -v flock >/dev/null; then flock -o "$lock" "$@"; else "$@"; fi
}

if [[ ! -x "$tools/bin/cargo-fuzz" ]]; then
  echo "installing cargo-fuzz into $tools" >&2
  locked cargo install cargo-fuzz --locked --root "$tools"
fi
export PATH="$tools/bin:$PATH"

# Debug assertions (integer overflow checks included) either way: what a fuzzer should see.
start=$(date +%s)
if [[ $profile == release ]]; then
  (cd fuzz && locked cargo +nightly fuzz build --release --debug-assertions)
else
  (cd fuzz && locked cargo +nightly fuzz build --dev)
fi
echo "fuzz targets built in $(($(date +%s) - start)) s" >&2

triple="$(rustc +nightly -vV | sed -n 's/^host: //p')"
bin_dir="fuzz/target/$triple/$profile"
# Two tree-sitter grammars (typescript, tsx) each define a C global named `map`: harmless, but
# AddressSanitizer's one-definition-rule check would stop every run (cargo fuzz run sets the same).
export ASAN_OPTIONS="detect_odr_violation=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Longest input per target: whole source files for the chunker, a few KB elsewhere.
max_len() {
  case "$1" in
    chunk | manifest | graph) echo 65536 ;;
    lsp_framing) echo 16384 ;;
    *) echo 4096 ;;
  esac
}

passed=0
failed=0
for source in fuzz/fuzz_targets/*.rs; do
  target="$(basename "$source" .rs)"
  corpus="$work/corpus/$target"
  artifacts="$PWD/fuzz/artifacts/$target"
  mkdir -p "$corpus" "$artifacts"
  cp -r "fuzz/corpus/$target/." "$corpus/" 2>/dev/null || true
  log="$work/$target.log"
  set +e
  "$bin_dir/$target" "$corpus" -max_total_time="$seconds" -max_len="$(max_len "$target")" -timeout=30 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" >"$log" 2>&1
  rc=$?
  set -e
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  saved="$(sed -n 's/.*Test unit written to //p' "$log" | tail -n 1)"
  if [[ $rc -eq 0 && -z "$saved" ]]; then
    echo "fuzz $target: ${execs:-0} execs, 0 crashes"
    passed=$((passed + 1))
  else
    # The fuzzer's own report: the error, then the stack.
    grep -E -m 1 -A 30 '^==[0-9]+==|panicked at|^ERROR:|deadly signal' "$log" >&2 || tail -n 40 "$log" >&2
    echo "fuzz $target: ${execs:-?} execs, 1 crash (exit $rc); input saved to ${saved:-$artifacts/ (see log above)}"
    failed=$((failed + 1))
  fi
done
echo "${passed} passed, ${failed} failed"
[[ $failed -eq 0 ]]
