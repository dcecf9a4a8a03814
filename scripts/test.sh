#!/usr/bin/env bash
# Every test: sets up, builds, and runs the GoogleTest suites and the end-to-end tests through ctest,
# then a short, seeded run of the fuzzers (tests/fuzz). Tests that need a GPU skip with a printed
# reason where none is present.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
status=0
(cd build && ctest --output-on-failure --timeout 900 -j2) || status=1
tests/fuzz/run_fuzzers.sh --short || status=1
exit $status
