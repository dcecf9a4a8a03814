#!/usr/bin/env bash
# The main job on the built-in default: sets up, builds, and runs the seed comparison —
# Linear(5, 10, bias=False) on x[2, 5], `jit,ddp` (ddp applied after jit) against `ddp,jit`,
# on 2 CPU ranks over gloo — and prints the verdict. With a display and the GUI built, it opens
# the GUI on that comparison instead.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
tool=build/bin/thunder-viz
seed=(--model linear --order jit,ddp --order ddp,jit --world 2)
if [[ -n "${DISPLAY:-}" ]] && "$tool" gui --help > /dev/null 2>&1; then
  echo "run-seed: a display is present: opening the GUI on the seed comparison" >&2
  exec "$tool" gui "${seed[@]}"
fi
echo "run-seed: no display (or no GUI in this build): running the seed comparison in batch mode" >&2
exec "$tool" compare "${seed[@]}"
