#!/usr/bin/env bash
# The GPU benchmarks of BENCHMARKS.md, each engine number next to PyTorch's measured in the same run:
# replay step vs PyTorch eager (Python) and LibTorch eager (C++) for gpt small and large, the step as a
# CUDA graph, the FSDP step vs torch's FSDP (fully_shard) on one GPU and on two where there are two, the
# DDP step vs torch DDP (same bucket size), all-reduce bus bandwidth vs torch's NCCL.
# Usage: tests/bench/run_gpu_benchmarks.sh BUILD_DIR OUT_DIR   (after tests/gpu/run_gpu_tests.sh built BUILD_DIR)
# Writes OUT_DIR/bench.jsonl (every measure), OUT_DIR/bench.md (the tables), one step's timeline of each
# side (*.json, Chrome traces) and their summaries side by side (timeline_*.txt, tests/bench/timeline.py).
set -uo pipefail
build=${1:?usage: run_gpu_benchmarks.sh BUILD_DIR OUT_DIR}
out=${2:?usage: run_gpu_benchmarks.sh BUILD_DIR OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$out"
jsonl="$out/bench.jsonl"
: > "$jsonl"
py=${PYTHON:-python3}
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)

small=(--layers 32 --d-model 64 --heads 4 --seq 16 --batch 2 --vocab 128)
small_tv=(--param layers=32 --param d_model=64 --param heads=4 --param seq=16 --param batch=2 --param vocab=128)
large=(--layers 12 --d-model 768 --heads 12 --seq 1024 --batch 8 --vocab 50304)
large_tv=(--param layers=12 --param d_model=768 --param heads=12 --param seq=1024 --param batch=8 --param vocab=50304)

run() {  # run NAME COMMAND...: appends the JSON lines it prints, logs the rest
  echo "=== $1" >&2
  local name=$1
  shift
  if ! timeout 300 "$@" > "$out/$name.out" 2> "$out/$name.err"; then
    echo "    FAILED: $name (see $name.err)" >&2
    tail -5 "$out/$name.err" >&2
  fi
  grep '^{' "$out/$name.out" >> "$jsonl"
}

# The overhead-bound step is host-bound on both sides, and these machines' host speed drifts over
# seconds: the engine and PyTorch take turns repeat by repeat (tests/bench/turns.h), in three pairs
# of processes; bench_tables.py gives the median of the 27 paired repeats' ratios.
for i in 1 2 3; do
  kineto_engine=() kineto_torch=()
  [ $i = 1 ] && kineto_engine=(--kineto "$out/small_engine.json") kineto_torch=(--kineto "$out/small_torch.json")
  fifos=$(mktemp -d)
  mkfifo "$fifos/to_torch" "$fifos/to_engine"
  run step_small_torch_$i "$py" "$here/bench_torch.py" step "${small[@]}" --steps 20 --repeats 9 \
    --turns "$fifos/to_torch:$fifos/to_engine:second" "${kineto_torch[@]}" &
  run step_small_engine_$i "$build/bin/tv_bench_step" --model gpt "${small_tv[@]}" --device cuda --steps 20 --repeats 9 \
    --turns "$fifos/to_engine:$fifos/to_torch:first" "${kineto_engine[@]}"
  wait
  rm -rf "$fifos"
done
"$py" "$here/timeline.py" "$out/small_engine.json" "$out/small_torch.json" --by-op > "$out/timeline_small.txt" 2>&1
run step_large_engine "$build/bin/tv_bench_step" --model gpt "${large_tv[@]}" --device cuda --steps 5 --repeats 3 --profile 30
run step_large_torch "$py" "$here/bench_torch.py" step "${large[@]}" --steps 5 --repeats 3 --profile 30
# FSDP (ZeRO-3, each block a unit on torch's side) on the large model at the DDP batch, on one GPU (the
# step with its gathers and reduce-scatters over a world of one) and on two where there are two.
sharded=(--layers 12 --d-model 768 --heads 12 --seq 1024 --batch 4 --vocab 50304)
sharded_tv=(--param layers=12 --param d_model=768 --param heads=12 --param seq=1024 --param batch=4 --param vocab=50304)
for world in 1 2; do
  [ "$gpus" -ge "$world" ] || continue
  run fsdp_engine_$world "$build/bin/tv_bench_ddp" --mode step --transform fsdp --world $world "${sharded_tv[@]}" \
    --steps 5 --repeats 3
  run fsdp_torch_$world "$py" "$here/bench_torch.py" fsdp --world $world "${sharded[@]}" --steps 5 --repeats 3
done
if [ "$gpus" -ge 2 ]; then
  ddp=(--layers 12 --d-model 768 --heads 12 --seq 1024 --batch 4 --vocab 50304)
  ddp_tv=(--param layers=12 --param d_model=768 --param heads=12 --param seq=1024 --param batch=4 --param vocab=50304)
  # The same model on one GPU at the DDP batch: how much of the DDP ratio is the step itself.
  # Each with one step's timeline (--kineto), summarised side by side in timeline_*.txt.
  run step_ddp_batch_engine "$build/bin/tv_bench_step" --model gpt "${ddp_tv[@]}" --device cuda --steps 5 --repeats 3 \
    --kineto "$out/step_engine.json"
  run step_ddp_batch_torch "$py" "$here/bench_torch.py" step "${ddp[@]}" --steps 5 --repeats 3 \
    --kineto "$out/step_torch.json"
  run ddp_engine "$build/bin/tv_bench_ddp" --mode step --world 2 "${ddp_tv[@]}" --bucket-mb 25 --steps 5 --repeats 3 \
    --profile 40 --kineto "$out/ddp_engine.json"
  run ddp_torch "$py" "$here/bench_torch.py" ddp --world 2 "${ddp[@]}" --bucket-mb 25 --steps 5 --repeats 3 --profile 40 \
    --kineto "$out/ddp_torch.json"
  "$py" "$here/timeline.py" "$out/step_engine.json" "$out/step_torch.json" > "$out/timeline_step.txt" 2>&1
  "$py" "$here/timeline.py" "$out/ddp_engine.json" "$out/ddp_torch.json" > "$out/timeline_ddp.txt" 2>&1
  run allreduce_engine "$build/bin/tv_bench_ddp" --mode allreduce --world 2 --iterations 20
  run allreduce_torch "$py" "$here/bench_torch.py" allreduce --world 2 --iterations 20
else
  echo "SKIP: DDP and all-reduce benchmarks need 2 GPUs ($gpus visible)" | tee "$out/ddp_skipped.txt" >&2
fi
"$py" "$here/bench_tables.py" "$jsonl" > "$out/bench.md"
cat "$out/bench.md"
