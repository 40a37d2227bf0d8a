#!/usr/bin/env bash
# Runs build_fusion_data.py in the benchmark's pinned tree-sitter venv (made by benches/retrieval/build.sh).
# Usage: research/training/build_fusion_data.sh [--force] [--survey]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/bench_venv.sh"
exec nice -n 19 "$venv/bin/python" "$here/build_fusion_data.py" "$@"
