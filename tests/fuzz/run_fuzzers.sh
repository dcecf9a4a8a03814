#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang-16, ASan + UBSan, into build-fuzz/ over the main build) and
# runs them over their seed corpora.
#     tests/fuzz/run_fuzzers.sh --short             a seeded run of fixed length: every regression input,
#                                                   then a fixed number of mutations per target
#     tests/fuzz/run_fuzzers.sh --long SECONDS      fuzz each target for SECONDS; report inputs per
#                                                   second and the total (the goal: >= 10 million each)
#     tests/fuzz/run_fuzzers.sh --runs N            fuzz each target for N inputs, however long it takes:
#                                                   `nice -n 19` lets it use only idle cores; with --jobs J,
#                                                   J processes of N/J inputs each share one corpus
#     tests/fuzz/run_fuzzers.sh ... --resume        start from the corpus the last run grew (kept under
#                                                   build-fuzz/fuzz/TARGET/corpus) instead of the seeds alone:
#                                                   a run cut short goes on where it stopped
#     tests/fuzz/run_fuzzers.sh ... [--jobs N] [TARGET...]   (trace_parser capture_decoder batch_config)
# Exit 0 when no target crashed, leaked, hung or broke its law; 1 otherwise, with the input kept under
# build-fuzz/fuzz/TARGET/ (minimise it with `-minimize_crash=1`, then add it to regressions/TARGET/).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
mode="" seconds=0 runs=0 jobs=1 resume=0 targets=()
while (($#)); do
  case "$1" in
    --short) mode=short ;;
    --long) mode=long; seconds="${2:?--long needs SECONDS}"; shift ;;
    --runs) mode=runs; runs="${2:?--runs needs N}"; shift ;;
    --jobs) jobs="${2:?--jobs needs N}"; shift ;;
    --resume) resume=1 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    trace_parser|capture_decoder|batch_config) targets+=("$1") ;;
    *) echo "run_fuzzers.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$mode" ] || { echo "run_fuzzers.sh: say --short, --long SECONDS or --runs N (see --help)" >&2; exit 2; }
[[ "$runs" =~ ^[0-9]+$ && "$seconds" =~ ^[0-9]+$ ]] || { echo "run_fuzzers.sh: SECONDS and N are whole numbers" >&2; exit 2; }
((${#targets[@]})) || targets=(trace_parser capture_decoder batch_config)

# clang 16 (Debian's clang-16): LibTorch's headers need a clang whose libstdc++ support has std::source_location.
"$root/scripts/apt_install.sh" fuzz clang-16 libclang-rt-16-dev
[ -f "$root/build/lib/libtv_capture.a" ] || "$root/scripts/setup.sh"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [ ! -f "$root/build-fuzz/build.ninja" ]; then
  cmake -S "$here" -B "$root/build-fuzz" -G Ninja -DCMAKE_CXX_COMPILER=clang++-16 "${launcher[@]}" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
    -DTV_MAIN_BUILD="$root/build" >/dev/null
fi
ninja -C "$root/build-fuzz" >/dev/null

# Seeds of each target: its own corpus, and the fixtures (real Thunder printouts) for the parser.
seeds() {
  case "$1" in
    trace_parser) echo "$root/tests/fixtures/thunder $root/tests/fixtures/thunder_cpu $here/corpus/trace_parser" ;;
    capture_decoder) echo "$here/corpus/capture" ;;  # the captures of tests/fixtures/captures, two stages a trace kind
    batch_config) echo "$here/corpus/batch_config $root/samples/batch" ;;
  esac
}
max_len() {  # captures are long documents; traces and configs short
  case "$1" in capture_decoder) echo 65536 ;; *) echo 16384 ;; esac
}
short_runs() {  # about half a minute each on a 2-core machine under the sanitizers
  case "$1" in capture_decoder) echo 3000 ;; batch_config) echo 20000 ;; *) echo 40000 ;; esac
}

# malloc_context_size=4: every allocation records 4 frames, not 30 (a third more inputs per second);
# a report's own stack stays whole, and an input replayed under the default options shows the rest.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1:malloc_context_size=4}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
failed=0
for t in "${targets[@]}"; do
  exe="$root/build-fuzz/bin/${t}_fuzzer"
  work="$root/build-fuzz/fuzz/$t"
  if ((resume)) && [ -d "$work/corpus" ]; then
    echo "== $t: resuming from the $(ls "$work/corpus" | wc -l) inputs of the last run's corpus"
  else
    rm -rf "$work/corpus"
  fi
  mkdir -p "$work/corpus" "$work/artifacts"
  # A unit that runs for a minute is a hang; 20 s was reached by a niced run starved by builds beside it.
  common=(-dict="$here/dict/$t.dict" -max_len="$(max_len "$t")" -timeout=60 -rss_limit_mb=4096
          -artifact_prefix="$work/artifacts/" -print_final_stats=1)
  regressions=("$here"/regressions/"$t"/*)
  if [ -e "${regressions[0]}" ]; then
    echo "== $t: ${#regressions[@]} regression input(s)"
    "$exe" "${common[@]}" "${regressions[@]}" >"$work/regressions.log" 2>&1 ||
      { echo "FAIL $t: a regression input fails again ($work/regressions.log)"; tail -30 "$work/regressions.log"; failed=1; continue; }
  fi
  # shellcheck disable=SC2046
  if [ "$mode" = short ]; then
    echo "== $t: $(short_runs "$t") inputs, seed 1"
    args=(-seed=1 -runs="$(short_runs "$t")")
  elif [ "$mode" = runs ]; then
    echo "== $t: $runs inputs on $jobs job(s)"
    args=(-runs="$(( runs / jobs ))")
    # Each job writes its own log, fuzz-K.log in the working folder: the totals below add them up.
    ((jobs > 1)) && args+=(-jobs="$jobs" -workers="$jobs")
  else
    echo "== $t: $seconds s on $jobs job(s)"
    args=(-max_total_time="$seconds")
    ((jobs > 1)) && args+=(-fork="$jobs" -ignore_crashes=0)
  fi
  start=$(date +%s)
  rm -f "$work"/fuzz-*.log
  if (cd "$work" && "$exe" "${common[@]}" "${args[@]}" "$work/corpus" $(seeds "$t") >"$work/run.log" 2>&1); then
    logs=("$work"/fuzz-*.log)  # jobs' own logs (run.log repeats them), or the one job's run.log
    [ -e "${logs[0]}" ] || logs=("$work/run.log")
    execs=$( { grep -ho 'stat::number_of_executed_units: *[0-9]*' "${logs[@]}" || true; } | awk '{s += $2} END {print s + 0}')
    if [ "$execs" -eq 0 ]; then  # fork mode (--jobs N) prints no unit counts: its last progress line has the total
      execs=$( { grep -o '^#[0-9]*' "$work/run.log" || true; } | tail -1 | tr -d '#')
      execs=${execs:-0}
    fi
    took=$(( $(date +%s) - start ))
    echo "ok   $t: $execs inputs in $took s ($(( execs / (took > 0 ? took : 1) )) per second), $(ls "$work/corpus" | wc -l) new corpus entries"
  else
    echo "FAIL $t: see $work/run.log; the input is under $work/artifacts/"
    grep -A25 -m1 "law broken\|ERROR: \|runtime error\|deadly signal" "$work/run.log" | head -40
    failed=1
  fi
done
exit $failed
