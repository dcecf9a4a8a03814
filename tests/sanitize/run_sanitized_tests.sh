#!/usr/bin/env bash
# The whole GoogleTest unit suite (the torch-side suites included: exec, dist, transforms, jit,
# autograd, ...) under AddressSanitizer + UndefinedBehaviorSanitizer: a GCC build in build-san/
# (-O1, line tables; no GUI, Python package or CUDA). Any report stops the test that made it and
# fails the run.
#     tests/sanitize/run_sanitized_tests.sh [GTEST_FILTER]      e.g. 'Parser*:Capture*'
# The log is build-san/sanitized_tests.log. Tests that need a GPU skip, as they do elsewhere.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
case "${1:-}" in -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
"$root/scripts/setup.sh" >/dev/null  # the Debian packages (and the main build)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [ ! -f "$root/build-san/build.ninja" ]; then
  cmake -S "$root" -B "$root/build-san" -G Ninja "${launcher[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" -DTV_SANITIZE=address,undefined \
    -DTV_BUILD_GUI=OFF -DTV_BUILD_PYTHON=OFF -DTV_CUDA=OFF >/dev/null
fi
ninja -C "$root/build-san" tv_unit_tests
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$root/tests/sanitize/lsan.supp}"
log="$root/build-san/sanitized_tests.log"
start=$(date +%s)
set +e
"$root/build-san/bin/tv_unit_tests" --gtest_filter="${1:-*}" --gtest_brief=1 >"$log" 2>&1
rc=$?
set -e
took=$(( $(date +%s) - start ))
grep -E "^\[  (PASSED|SKIPPED|FAILED) +\]|tests ran" "$log" | tail -5 || true
if grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error:" "$log"; then
  echo "sanitizer report(s) in $log:"
  grep -m5 -A20 -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$log" | head -60
  rc=1
fi
echo "$( ((rc == 0)) && echo clean || echo FAILED ): the unit suite under ASan + UBSan in $took s (log: $log)"
exit $rc
