#!/usr/bin/env bash
# The main job on the built-in default: sets up, builds, and shows the seed model's traces
# (Linear(5, 10, bias=False) on x[2, 5]): prologue, computation and epilogue.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec build/bin/thunder-viz show --model linear --trace all
