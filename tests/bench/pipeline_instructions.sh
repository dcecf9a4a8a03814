#!/usr/bin/env bash
# Instructions the pipeline executes per bound symbol (callgrind), beside tv_bench_pipeline's times:
# instruction counts repeat from run to run on a shared, noisy machine where times do not.
# Counts only tv::build_pipeline (acquisition, autograd, transforms, passes, the stage history) of
# one build of gpt (d_model 64) for each depth, order jit,ddp unless given.
# With --cache BYTES, callgrind also simulates the caches, its last level BYTES large (16-way,
# 64-byte lines: give the size of one core's L2, 1048576 on the AMD host, since a pass that walks a
# trace larger than that reads it from the shared L3 or memory), and the table gains the misses per
# bound symbol of the first level (the host's L1d) and of that level: the memory traffic the
# instruction count leaves out, which is what grows with the depth. About 3x slower.
# Usage: tests/bench/pipeline_instructions.sh [--cache BYTES] BUILD_DIR [ORDER] [LAYERS...]   (default: jit,ddp 1 4 16 32)
set -euo pipefail
cache=
if [ "${1:-}" = --cache ]; then
  cache=${2:?--cache takes the size in bytes of the level to simulate (1048576: a 1 MiB L2)}
  [[ $cache =~ ^[0-9]+$ ]] || { echo "--cache takes a size in bytes, got '$cache'" >&2; exit 2; }
  shift 2
fi
build=${1:?usage: pipeline_instructions.sh [--cache BYTES] BUILD_DIR [ORDER] [LAYERS...]}
order=${2:-jit,ddp}
shift $(( $# >= 2 ? 2 : 1 ))
depths=("$@")
((${#depths[@]})) || depths=(1 4 16 32)
bench=$build/bin/tv_bench_pipeline
[ -x "$bench" ] || { echo "missing $bench (ninja -C $build tv_bench_pipeline)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Debian's LibTorch pulls in Highway (libhwy, through libjxl), whose load-time timer probe executes
# `rdtscp`, an instruction valgrind 3.19 stops at on some CPUs. The probe is called through the PLT,
# so a preloaded definition that returns a constant replaces it; nothing the pipeline runs uses it.
preload=()
if [[ $(ldd "$bench") == *libhwy* ]]; then
  printf '#include <cstdint>\nnamespace hwy::platform { uint64_t TimerResolution() { return 1; } }\n' > "$work/hwy_timer.cpp"
  "${CXX:-c++}" -std=c++17 -O2 -shared -fPIC -o "$work/hwy_timer.so" "$work/hwy_timer.cpp"
  preload=(env "LD_PRELOAD=$work/hwy_timer.so")
fi
simulate=()
if [ -n "$cache" ]; then
  simulate=(--cache-sim=yes "--LL=$cache,16,64")
  echo "| gpt layers | order | bound symbols | instructions (millions) | instructions per bound symbol | L1d misses per bound symbol | misses of the simulated $cache-byte level per bound symbol (read + write) |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
else
  echo "| gpt layers | order | bound symbols | instructions (millions) | instructions per bound symbol |"
  echo "| --- | --- | --- | --- | --- |"
fi
for layers in "${depths[@]}"; do
  "${preload[@]}" valgrind --tool=callgrind "${simulate[@]}" --callgrind-out-file="$work/out" \
    "--toggle-collect=tv::build_pipeline*" "$bench" --pipeline "$layers" "$order" > "$work/row" 2> "$work/log"
  # "Collected : Ir" or, with the caches, "Collected : Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw"
  read -r -a counts <<< "$(sed -n 's/.*Collected : \([0-9 ]*\).*/\1/p' "$work/log")"
  # the row: | layers | order | forward bsyms | backward bsyms | ms | us |
  bsyms=$(awk -F'|' 'NR == 3 { print $4 + $5 }' "$work/row")
  if [ -n "$cache" ]; then
    awk -v l="$layers" -v o="$order" -v b="$bsyms" -v ir="${counts[0]}" -v d1="$((counts[4] + counts[5]))" \
      -v llr="${counts[7]}" -v llw="${counts[8]}" \
      'BEGIN { printf "| %s | %s | %d | %.1f | %.0f | %.0f | %.0f (%.0f + %.0f) |\n", l, o, b, ir / 1e6, ir / b, d1 / b, (llr + llw) / b, llr / b, llw / b }'
  else
    awk -v l="$layers" -v o="$order" -v b="$bsyms" -v ir="${counts[0]}" \
      'BEGIN { printf "| %s | %s | %d | %.1f | %.0f |\n", l, o, b, ir / 1e6, ir / b }'
  fi
done
