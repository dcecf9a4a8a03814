#!/usr/bin/env bash
# Every test: sets up, builds, and runs the GoogleTest suites through ctest. Tests that need a GPU
# skip with a printed reason where none is present.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd build
ctest --output-on-failure --timeout 900 -j2
