#!/usr/bin/env bash
# Runs every check and test of raggrep on a fresh machine: installs the model and ONNX Runtime
# (pinned, checksummed; ~0 s when already there), then format, lints, tests and benchmark builds.
# CI runs exactly this (.ci/run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n==> %s\n' "$*" >&2; }

step "bootstrap model + runtime"
bash scripts/bootstrap.sh

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --all-targets --locked -- -D warnings

step "cargo test"
cargo test --locked

step "benchmarks compile"
cargo bench --locked --no-run
