#!/usr/bin/env bash
# Run the property-based (hypothesis) tests with fresh randomness under seeds 0..9
# (CI itself runs them derandomised). Usage: scripts/hypothesis_seeds.sh [first last]
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(grep -l "@given" tests/*.py)
for seed in $(seq "${1:-0}" "${2:-9}"); do
  HYPOTHESIS_PROFILE=explore python -m pytest -q --no-header -p no:cacheprovider \
    --hypothesis-seed="$seed" $files -k "$(grep -h -A8 "@given" $files | \
    sed -n 's/^def \(test_[a-z0-9_]*\).*/\1/p' | paste -sd'|' - | sed 's/|/ or /g')" | tail -n 1 | \
    sed "s/^/seed $seed: /"
done
