#!/usr/bin/env bash
# The GUI benchmark (tv_bench_gui) under a private Xvfb, so the numbers come from Mesa's software
# renderer (llvmpipe) whatever the machine has; makes the 32-layer gpt capture it opens first
# (kept in WORK_DIR between runs). Prints the machine, then Markdown tables for BENCHMARKS.md.
# Usage: run_gui_bench.sh BUILD_DIR [WORK_DIR] [FRAMES]   (needs bin/tv_bench_gui and bin/thunder-viz)
set -eu
BUILD=$1 WORK=${2:-$1/bench-gui} FRAMES=${3:-300}
BENCH=$BUILD/bin/tv_bench_gui TV=$BUILD/bin/thunder-viz
for b in "$BENCH" "$TV"; do [ -x "$b" ] || { echo "missing $b (ninja -C $BUILD tv_bench_gui thunder-viz)"; exit 2; }; done
command -v Xvfb >/dev/null || { echo "Xvfb is not installed (apt-get install xvfb)"; exit 2; }
mkdir -p "$WORK"

CAPTURE=$WORK/gpt32.tvz.json
if [ ! -s "$CAPTURE" ]; then
  echo "making $CAPTURE:"
  echo "  thunder-viz compare --model gpt --param layers=32 --order jit,ddp --order ddp,jit --world 1 --out $CAPTURE"
  "$TV" compare --model gpt --param layers=32 --order jit,ddp --order ddp,jit --world 1 --out "$CAPTURE" >"$WORK/capture.log"
fi

# As `thunder-viz gui` starts the engine: glibc's malloc on transparent huge pages (app/reader/main.cpp).
case "${GLIBC_TUNABLES:-}" in
  *glibc.malloc.hugetlb*) ;;
  "") export GLIBC_TUNABLES=glibc.malloc.hugetlb=1 ;;
  *) export GLIBC_TUNABLES="$GLIBC_TUNABLES:glibc.malloc.hugetlb=1" ;;
esac
. "$(dirname "$0")/../gui/private_xvfb.sh"
start_private_xvfb "$WORK/xvfb.log" || exit 1

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(. /etc/os-release && echo "$PRETTY_NAME")"
echo "capture: $(du -h "$CAPTURE" | cut -f1) $CAPTURE"
echo "GLIBC_TUNABLES=$GLIBC_TUNABLES"
"$BENCH" --frames "$FRAMES" --size 1600x1000 --capture "$CAPTURE"
