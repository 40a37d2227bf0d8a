#!/usr/bin/env bash
# Runs every check and test of raggrep on a fresh machine: installs the model and ONNX Runtime
# (pinned, checksummed; ~0 s when already there), then format, lints, tests, benchmark builds and
# the quick retrieval benchmark (sanity only, never timings). CI runs exactly this (.ci/run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n==> %s\n' "$*" >&2; }
log="$(mktemp)"
trap 'rm -f "$log"' EXIT

step "bootstrap model + runtime"
bash scripts/bootstrap.sh

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --all-targets --locked -- -D warnings

step "cargo test"
cargo test --locked 2>&1 | tee "$log"

step "benchmarks compile"
cargo bench --locked --no-run

step "Neovim client in a real headless Neovim 0.11"
RAGGREP_BIN="$PWD/target/debug/raggrep" bash editors/nvim/test/run.sh

step "retrieval benchmark, quick mode (numbers produced and sane)"
bash benches/retrieval/build.sh --quick
cargo bench --locked --bench retrieval -- --quick --check

passed=$(awk '/^test result:/ { for (i = 1; i < NF; i++) if ($(i+1) ~ /^passed/) s += $i } END { print s + 0 }' "$log")
failed=$(awk '/^test result:/ { for (i = 1; i < NF; i++) if ($(i+1) ~ /^failed/) s += $i } END { print s + 0 }' "$log")
echo
echo "tests: ${passed} passed, ${failed} failed"
