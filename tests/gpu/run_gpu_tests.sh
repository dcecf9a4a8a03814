#!/usr/bin/env bash
# Builds Thunder Viz against the GPU machine's PyTorch (LibTorch with CUDA, NCCL) and runs what
# needs GPUs: the GPU tests of the unit suite (CUDA executor per op in f32 and bf16, DDP/FSDP on two
# GPUs, out of memory, NCCL collectives and timeouts), the NCCL smoke driver, the CLI on CUDA
# (CUDA-event timings, --chrome-trace, NCCL compare), and the bad-input paths (more ranks than GPUs,
# out of memory: exit code, message, capture still written). Logs go to $LOG_DIR (default build-gpu/logs).
# Usage (on a machine with GPUs): tests/gpu/run_gpu_tests.sh [--full] [--bench]
#   --full   also the whole unit suite (CPU tests included) on this LibTorch
#   --bench  then the GPU benchmarks (tests/bench/run_gpu_benchmarks.sh) into $LOG_DIR/bench
set -uo pipefail
cd "$(dirname "$0")/../.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
full=0 bench=0
for a in "$@"; do
  case $a in
    --full) full=1 ;;
    --bench) bench=1 ;;
    -h|--help) sed -n 2,10p "$0"; exit 0 ;;
    *) echo "unknown argument $a (see --help)"; exit 2 ;;
  esac
done
log_dir=${LOG_DIR:-build-gpu/logs}
mkdir -p "$log_dir"
status=0
step() {  # step NAME COMMAND...: runs, logs, remembers failures
  local name=$1
  shift
  echo "=== $name: $*" | tee -a "$log_dir/summary.txt"
  local start=$SECONDS
  if timeout 600 "$@" > "$log_dir/$name.log" 2>&1; then
    echo "    ok ($((SECONDS - start)) s)" | tee -a "$log_dir/summary.txt"
  else
    echo "    FAILED (exit $?, $((SECONDS - start)) s), see $name.log" | tee -a "$log_dir/summary.txt"
    tail -30 "$log_dir/$name.log"
    status=1
  fi
}
expect_exit() {  # expect_exit CODE NAME COMMAND...: the command must exit with CODE
  local code=$1 name=$2
  shift 2
  echo "=== $name (expects exit $code): $*" | tee -a "$log_dir/summary.txt"
  timeout 600 "$@" > "$log_dir/$name.log" 2>&1
  local got=$?
  if [ "$got" -eq "$code" ]; then
    echo "    ok" | tee -a "$log_dir/summary.txt"
  else
    echo "    FAILED: exit $got, see $name.log" | tee -a "$log_dir/summary.txt"
    tail -30 "$log_dir/$name.log"
    status=1
  fi
}

# libdtl is header-only (Debian's libdtl-dev); a machine without the package takes a copy of its
# dtl/ folder in .deps/include/ (engine/CMakeLists.txt looks there).
if [ ! -f /usr/include/dtl/dtl.hpp ] && [ ! -f .deps/include/dtl/dtl.hpp ]; then
  echo "run_gpu_tests.sh: libdtl's headers are missing: apt-get install libdtl-dev, or copy a dtl/ folder" \
       "(from /usr/include/dtl of a machine that has the package) into .deps/include/" >&2
  exit 2
fi
prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
nvidia-smi -L > "$log_dir/gpus.txt" 2>&1
python3 -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.device_count())' >> "$log_dir/gpus.txt" 2>&1
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
# The system g++ when there is one (libstdc++ shared, as LibTorch's); CXX overrides. With a g++ that
# has only a static libstdc++ the build links the system's libstdc++.so.6 (see the top CMakeLists).
cxx=/usr/bin/g++
[ -x "$cxx" ] || cxx=$(command -v g++)
cxx=${CXX:-$cxx}
echo "compiler: $cxx (CXX=${CXX:-unset})" >> "$log_dir/gpus.txt"
step configure cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_CUDA_ARCHITECTURES=90 -DTV_CUDA=ON \
  -DTV_BUILD_GUI=OFF -DTV_BUILD_PYTHON=${TV_BUILD_PYTHON:-AUTO} -DPython_EXECUTABLE="$(command -v python3)"
targets=(thunder-viz tv_unit_tests tv_dist_smoke tv_bench_step tv_bench_ddp)
# The Python package when configure found pybind11 and torch's libtorch_python (TV_BUILD_PYTHON=AUTO).
# (grep reads all of it: with pipefail, grep -q would stop ninja with SIGPIPE and fail the test at random)
ninja -C build-gpu -t targets all 2>/dev/null | grep '^_thunder_viz:' > /dev/null && targets+=(_thunder_viz)
step build ninja -C build-gpu -k 0 "${targets[@]}"
bin=build-gpu/bin
# Line-buffered: a crash leaves the test it happened in as the log's last "[ RUN ]" line, and the
# stack tests/unit/crash_stack.cpp prints gets function names here (addr2line).
symbolize() {  # symbolize LOG BINARY: appends the crash stack's frames of BINARY with names
  grep -q '^\*\*\* tv_unit_tests crashed' "$1" || return 0
  echo "--- crash stack, symbolized:" >> "$1"
  grep -o "$(basename "$2")(+0x[0-9a-f]*)" "$1" | grep -o '0x[0-9a-f]*' | while read -r off; do
    echo "$off $(addr2line -Cfpe "$2" "$off" 2>/dev/null)"
  done >> "$1"
}
step gpu_unit_tests stdbuf -oL $bin/tv_unit_tests --gtest_filter='*ExecOps*:Gpu*:DistNccl*:ExecTest*:SmallGemm*:FastViews*'
symbolize "$log_dir/gpu_unit_tests.log" $bin/tv_unit_tests
if [ $full = 1 ]; then
  step unit_tests stdbuf -oL $bin/tv_unit_tests
  symbolize "$log_dir/unit_tests.log" $bin/tv_unit_tests
fi
step dist_smoke $bin/tv_dist_smoke
out=$log_dir/cli
mkdir -p "$out"
step run_mlp_cuda $bin/thunder-viz run --model mlp --device cuda --out "$out/mlp.tvz.json" --chrome-trace "$out/mlp.chrome.json"
step chrome_trace_has_cuda_events python3 - "$out/mlp.chrome.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
events = [e for e in doc["traceEvents"] if e["ph"] == "X"]
names = [e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"]
assert events and all(e["dur"] >= 0 for e in events), events[:3]
assert any("CUDA events" in n for n in names), names
assert {"forward", "backward"} <= {e["cat"] for e in events}, {e["cat"] for e in events}
print(len(events), "events;", names)
PY
step run_gpt_cuda $bin/thunder-viz run --model gpt --device cuda
step run_gpt_cuda_graph $bin/thunder-viz run --model gpt --param layers=32 --device cuda --cuda-graph
if [ "$gpus" -ge 2 ]; then
  step seed_nccl $bin/thunder-viz compare --model linear --order jit,ddp --order ddp,jit --world 2 --device cuda
  step mlp_ddp_nccl $bin/thunder-viz compare --model mlp --order jit,ddp --order ddp,jit --world 2 --device cuda
  step gpt_ddp_nccl $bin/thunder-viz compare --model gpt --order jit,ddp --order ddp,jit --world 2 --device cuda \
    --chrome-trace "$out/gpt_ddp.chrome.json"
  step gpt_fsdp_nccl $bin/thunder-viz compare --model gpt --order jit,fsdp --order fsdp,jit --world 2 --device cuda
fi
expect_exit 2 more_ranks_than_gpus $bin/thunder-viz compare --model mlp --order jit,ddp --order ddp,jit \
  --world $((gpus + 1)) --device cuda --out "$out/too_many.tvz.json"
step more_ranks_capture_written grep -q "needs one GPU per rank" "$out/too_many.tvz.json"
expect_exit 1 out_of_memory $bin/thunder-viz run --model gpt --param layers=1 --param batch=64 --param seq=8192 \
  --param vocab=65536 --device cuda --out "$out/oom.tvz.json"
step oom_capture_written grep -q "GPU out of memory" "$out/oom.tvz.json"
if compgen -G "build-gpu/python/thunder_viz/_thunder_viz*.so" > /dev/null; then
  if python3 -c 'import pytest' 2>/dev/null; then
    step python_package env PYTHONPATH=build-gpu/python python3 -m pytest -q -rs tests/python tests/models
  else
    echo "SKIP: python_package: pytest is not installed for $(command -v python3)" | tee -a "$log_dir/summary.txt"
  fi
else
  echo "SKIP: python_package: not built (see configure.log: thunder-viz python)" | tee -a "$log_dir/summary.txt"
fi
if [ $bench = 1 ]; then
  tests/bench/run_gpu_benchmarks.sh build-gpu "$log_dir/bench" > "$log_dir/bench.log" 2>&1 || status=1
  cat "$log_dir/bench.log"
fi
rm -f "$out"/*.tvz.json  # large; the checks above read them
exit $status
