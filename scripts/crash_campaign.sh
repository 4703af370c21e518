#!/usr/bin/env bash
# The long crash-consistency campaign (docs/reliability.md): SIGKILLs a real training run at
# KILLS file-system operations spread over the whole run (checkpoint writes, metric appends,
# pointer commits) and at RANDOM random moments, resumes each, and checks every outcome against an
# uninterrupted run; then kills `tensorscope sweep run` SWEEP_KILLS times (alone, and with its trial
# processes) and checks that each sweep finishes with the report of an uninterrupted one. Writes the
# figures to REPORT (JSON).
# usage: scripts/crash_campaign.sh [BUILD_DIR] [KILLS] [RANDOM] [REPORT] [SWEEP_KILLS]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
KILLS=${2:-160}
RANDOM_KILLS=${3:-60}
REPORT=${4:-bench/results/crash_campaign-$(date +%Y-%m-%d).json}
SWEEP_KILLS=${5:-30}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
python3 tests/cli/test_crash_consistency.py "$BUILD/app/tensorscope" "$WORK/campaign" \
  --kills "$KILLS" --random "$RANDOM_KILLS" --sweep-kills "$SWEEP_KILLS" --seed "${SEED:-7}" --report "$REPORT"
echo "report: $REPORT"
