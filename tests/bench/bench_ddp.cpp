// DDP and FSDP on the GPUs, and the all-reduce under them. Not a test: prints JSON lines for
// tests/bench/run_gpu_benchmarks.sh, which runs torch's DistributedDataParallel, its FSDP
// (fully_shard) and torch.distributed.all_reduce (bench_torch.py) on the same shapes in the same run.
//  --mode step: every rank (a thread with its own GPU, NCCL through the engine's communicator)
//    runs the jit,ddp pipeline's prologue, forward and backward (whose bucketed all-reduces average
//    the gradients), or with --transform fsdp the jit,fsdp pipeline's (each parameter sharded, gathered
//    before its use, its gradient reduce-scattered; ZeRO-3); the median over --repeats of the mean step
//    time of --steps steps, rank 0's clock, all ranks synchronised (device and barrier) at both ends.
//    One rank is a world too: FSDP on one GPU is the step plus its collectives over one member.
//  --mode allreduce: in-place f32 all_reduce of 1 MiB .. 1 GiB; time per call (each call waits for
//    completion, as the replay's collectives do) and NCCL's bus bandwidth convention
//    busbw = bytes * 2 (W - 1) / W / time.
//  --profile N (step): then one more step with per-bound-symbol CUDA-event times; rank 0 prints its N
//    costliest statements (tests/bench/profile.h).
//  --kineto FILE (step): then one more step recorded by LibTorch's profiler on rank 0, both devices'
//    kernels with their streams, as a Chrome trace (tests/bench/kineto.h, tests/bench/timeline.py).
// Usage: tv_bench_ddp --mode step|allreduce [--transform ddp|fsdp] [--world 2] [--param layers=12 ...]
//        [--bucket-mb 25] [--profile N] [--kineto ddp.json]
#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "engine_step.h"
#include "kineto.h"
#include "profile.h"
#include "dist/world.h"
#include "exec/device_check.h"
#include "jit/zoo.h"
#include "pipeline/pipeline.h"
#include "record/results.h"


namespace tv {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void sharded_step(const std::string& transform, int world, const std::map<std::string, std::string>& params,
                  double bucket_mb, int steps, int repeats, int profile, bench::KinetoOnMainThread* kineto) {
  std::vector<double> ms;
  std::atomic<bool> recording{false};
  dist::World w(world, dist::Backend::nccl);
  w.run([&](int rank, dist::Communicator& comm) {
    auto p = params;
    p["device"] = "cuda:" + std::to_string(rank);
    p["seed"] = std::to_string(rank);  // each rank its own batch (the weights are broadcast by ddp and fsdp)
    jit::Module module = jit::make_model("gpt", p);
    PipelineSpec spec;
    spec.order = {"jit", transform};
    spec.world_size = world;
    spec.device = p["device"];
    TransformContext context;
    context.world_size = world;
    context.rank = rank;
    context.broadcast_from_rank0 = [&comm](at::Tensor& t) { comm.broadcast(t, 0); };
    context.device = *Device::parse(p["device"]);
    context.bucket_size_mb = bucket_mb;
    auto built = build_pipeline(module, ValidatedOrder(spec.order), context);
    exec::ExecOptions options;
    options.device = context.device;
    options.user = &comm;
    bench::EngineStep step(module, built.stages, options);
    for (int i = 0; i < 3; ++i) step();
    for (int r = 0; r < repeats; ++r) {
      bench::synchronize_cuda(rank);
      comm.barrier();
      auto start = Clock::now();
      for (int s = 0; s < steps; ++s) step();
      bench::synchronize_cuda(rank);
      comm.barrier();
      if (rank == 0) ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count() / steps);
    }
    if (profile > 0)  // every rank steps (the collectives need all); rank 0 prints
      bench::profile_step(step, profile, rank == 0 ? &std::cerr : nullptr);
    if (rank == 0)  // now: a failure of the profiling below loses nothing measured
      std::cout << "{\"bench\": \"" << transform << "_step\", \"world\": " << world << ", \"bucket_mb\": "
                << (transform == "ddp" ? bucket_mb : 0) << ", \"engine_ms\": " << median(ms) << "}" << std::endl;
    if (kineto) {  // every rank steps; the main thread records both devices
      // Starting or stopping the profiler waits for the devices: no collective may be in flight
      // meanwhile, so every device goes idle and the other ranks wait on the host until it is done.
      auto switch_profiler = [&](bool on) {
        bench::synchronize_cuda(rank);
        comm.barrier();
        bench::synchronize_cuda(rank);
        if (rank == 0) {
          on ? kineto->start() : kineto->stop();
          recording = on;
        }
        while (recording != on) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      };
      switch_profiler(true);
      step();
      switch_profiler(false);
    }
  });
}

void all_reduce_bandwidth(int world, int iterations) {
  std::map<int64_t, double> seconds;  // bytes -> median seconds per call
  dist::World w(world, dist::Backend::nccl);
  w.run([&](int rank, dist::Communicator& comm) {
    for (int64_t bytes = int64_t(1) << 20; bytes <= int64_t(1) << 30; bytes <<= 2) {
      at::Tensor t = at::ones({bytes / 4}, at::TensorOptions().dtype(at::kFloat).device(at::Device(at::kCUDA, rank)));
      for (int i = 0; i < 3; ++i) comm.all_reduce(t);
      std::vector<double> times;
      for (int i = 0; i < iterations; ++i) {
        bench::synchronize_cuda(rank);
        comm.barrier();
        auto start = Clock::now();
        comm.all_reduce(t);
        bench::synchronize_cuda(rank);
        times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
      }
      if (rank == 0) seconds[bytes] = median(times);
    }
  });
  for (const auto& [bytes, s] : seconds) {
    double busbw = bytes * 2.0 * (world - 1) / world / s / 1e9;
    std::cout << "{\"bench\": \"all_reduce\", \"world\": " << world << ", \"bytes\": " << bytes
              << ", \"engine_us\": " << s * 1e6 << ", \"engine_busbw_gbs\": " << busbw << "}\n";
  }
}

int run(int argc, char** argv) {
  bench::BenchArgs args(argc, argv,
                        {"mode", "transform", "world", "steps", "repeats", "iterations", "bucket-mb", "profile", "kineto"});
  if (args.help) {
    std::cout << "Usage: tv_bench_ddp --mode step|allreduce [--transform ddp|fsdp] [--world 2] [--param key=value ...] "
                 "[--bucket-mb 25] [--steps 10] [--repeats 5] [--iterations 20] [--profile N] [--kineto FILE.json]\n";
    return 0;
  }
  std::string mode = args.get("mode", "step"), transform = args.get("transform", "ddp");
  if (transform != "ddp" && transform != "fsdp")
    throw std::invalid_argument("--transform " + transform + ": use ddp or fsdp");
  int world = args.get_int("world", 2), steps = args.get_int("steps", 10), repeats = args.get_int("repeats", 5),
      iterations = args.get_int("iterations", 20);
  double bucket_mb = args.get_double("bucket-mb", 25);
  const auto& params = args.params;
  if (!dist::nccl_available()) throw std::invalid_argument("this build has no NCCL (TV_HAVE_CUDA off): run it on the GPU machine");
  if (auto why = exec::device_unavailable("cuda:0", world); !why.empty()) throw std::invalid_argument(why);
  if (mode == "step") {
    int profile = args.get_int("profile", 0);
    if (auto path = args.get("kineto", ""); !path.empty()) {
      bench::KinetoOnMainThread kineto(path);
      kineto.serve([&] { sharded_step(transform, world, params, bucket_mb, steps, repeats, profile, &kineto); });
      std::cerr << "kineto trace of one " << transform << " step: " << path << "\n";
    } else {
      sharded_step(transform, world, params, bucket_mb, steps, repeats, profile, nullptr);
    }
  }
  else if (mode == "allreduce") all_reduce_bandwidth(world, iterations);
  else throw std::invalid_argument("--mode " + mode + ": use step or allreduce");
  return 0;
}

}  // namespace
}  // namespace tv

int main(int argc, char** argv) { return tv::bench::main_of("tv_bench_ddp", argc, argv, tv::run); }
