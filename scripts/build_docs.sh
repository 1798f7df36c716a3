#!/usr/bin/env bash
# Build the documentation site (and execute every notebook) with warnings as errors.
#   scripts/build_docs.sh            -> docs/_build/html/index.html
# Environment: PYMC_EDP_NB_EXECUTION=force|cache|off (default cache; a fresh checkout
# has no cache, so every notebook runs), PYMC_EDP_NB_TIMEOUT=seconds per cell (300).
set -euo pipefail
cd "$(dirname "$0")/.."
export MPLBACKEND=Agg
exec python -m sphinx -W --keep-going -b html docs docs/_build/html "$@"
