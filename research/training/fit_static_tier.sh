#!/usr/bin/env bash
# Fits a static token table to the code model's chunk vectors (fit_static_tier.py; issue 54):
#   fit_static_tier.sh embed                    the chunk pool through the code model (cached)
#   fit_static_tier.sh fit --out ROWS.f32 ...   the table, its validation fidelity beside it
# Needs build_chunk_pool.sh's output and the retrieval bench's distilled table (--static-tier).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
home="${RAGGREP_HOME:-$HOME/.cache/raggrep}"
py="$home/tools/venv/bin/python"
[[ -x "$py" ]] || { echo "fit_static_tier.sh: $py missing; run scripts/bootstrap.sh" >&2; exit 1; }
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
exec nice -n 19 "$py" "$here/fit_static_tier.py" "$@"
