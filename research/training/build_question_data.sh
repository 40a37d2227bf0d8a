#!/usr/bin/env bash
# Runs build_question_data.py in the benchmark's pinned tree-sitter venv (made by benches/retrieval/build.sh),
# over the fusion dataset of build_fusion_data.sh.
# Usage: research/training/build_question_data.sh [--data DIR] [--out DIR]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/bench_venv.sh"
exec nice -n 19 "$venv/bin/python" "$here/build_question_data.py" "$@"
