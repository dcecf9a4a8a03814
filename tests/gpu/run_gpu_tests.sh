#!/usr/bin/env bash
# Builds Thunder Viz against the GPU machine's PyTorch (LibTorch with CUDA, NCCL) and runs what
# needs GPUs: the whole unit suite (CUDA/NCCL tests run instead of skipping), the NCCL smoke
# driver, and the seed comparison on two GPUs through NCCL. Logs go to $LOG_DIR (default build-gpu/logs).
# Usage (on a machine with GPUs): tests/gpu/run_gpu_tests.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
log_dir=${LOG_DIR:-build-gpu/logs}
mkdir -p "$log_dir"
status=0
step() {  # step NAME COMMAND...: runs, logs, remembers failures
  local name=$1
  shift
  echo "=== $name: $*" | tee -a "$log_dir/summary.txt"
  if "$@" > "$log_dir/$name.log" 2>&1; then
    echo "    ok" | tee -a "$log_dir/summary.txt"
  else
    echo "    FAILED (exit $?), see $name.log" | tee -a "$log_dir/summary.txt"
    tail -30 "$log_dir/$name.log"
    status=1
  fi
}

prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
nvidia-smi -L > "$log_dir/gpus.txt" 2>&1
python3 -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.device_count())' >> "$log_dir/gpus.txt" 2>&1
step configure cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_CUDA_ARCHITECTURES=90 -DTV_CUDA=ON \
  -DTV_BUILD_GUI=OFF -DTV_BUILD_PYTHON=OFF
step build ninja -C build-gpu -k 0 thunder-viz tv_unit_tests tv_dist_smoke
step unit_tests build-gpu/bin/tv_unit_tests --gtest_brief=1
step dist_smoke build-gpu/bin/tv_dist_smoke
step run_mlp_cuda build-gpu/bin/thunder-viz run --model mlp --device cuda
step run_gpt_cuda build-gpu/bin/thunder-viz run --model gpt --device cuda
step seed_nccl build-gpu/bin/thunder-viz compare --model linear --order jit,ddp --order ddp,jit --world 2 --device cuda
step mlp_ddp_nccl build-gpu/bin/thunder-viz compare --model mlp --order jit,ddp --order ddp,jit --world 2 --device cuda
step gpt_fsdp_nccl build-gpu/bin/thunder-viz compare --model gpt --order jit,fsdp --order fsdp,jit --world 2 --device cuda
exit $status
