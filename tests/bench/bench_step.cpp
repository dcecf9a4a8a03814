// Replay step against eager, and the same step as a CUDA graph. Not a test: prints JSON lines
// (one per measure, read by tests/bench/run_gpu_benchmarks.sh) and a Markdown row.
// For a built-in model at the given parameters on one device:
//  - engine: the executor runs the final prologue, forward and backward (replay/step.h);
//  - libtorch_eager: eager_reference (LibTorch ops + autograd in C++) on the same weights, inputs
//    and cotangents;
//  - engine_cuda_graph (CUDA device): the engine's step captured once as a CUDA graph and replayed
//    (replay/cuda_graph.h, as `thunder-viz run --cuda-graph`); its numbers are checked against the
//    uncaptured step's; the mean of steps x repeats replays.
// Each is the median over --repeats of the mean of --steps steps, synchronised at both ends. The
// engine first warms up for --warmup steps and at least --warmup-seconds (3 and 5), as
// bench_torch.py does: a host-bound step's time drifts on the GPU machines, most in a process's
// first seconds. stderr lists every repeat, and the engine's step timed once more after the eager
// reference, so a process that gets faster as it runs shows there.
// --generated-kernels off: the executor runs fusion regions member by member (ExecOptions).
// --engine-only on: times the engine's step alone (no eager reference, no CUDA graph), as a
// profiler run of the engine wants it.
// --cpu N: pins the process to CPU N first (sched_setaffinity), to tell a slow process's placement
// from the engine; stderr says which CPU the step ran on at the start and at the end.
// --turns IN:OUT:first|second: the engine's repeats take turns with another process's (turns.h),
// bench_torch.py's in run_gpu_benchmarks.sh; the JSON line lists every repeat (engine_repeats_ms).
// --profile N: after the timing, one more engine step with per-bound-symbol times (CUDA events on
// CUDA) prints its N costliest statements and the totals per symbol to stderr, so a ratio above
// target can be traced to the statements behind it.
// --kineto FILE: then one more engine step recorded by LibTorch's profiler, saved as a Chrome trace
// (tests/bench/kineto.h; summarise it with tests/bench/timeline.py).
// Usage: tv_bench_step --model gpt --param layers=32 [--param ...] [--device cuda] [--steps 20] [--repeats 5]
//        [--warmup 3] [--warmup-seconds 5] [--generated-kernels on|off] [--cpu N]
//        [--turns IN:OUT:first|second] [--profile 25] [--kineto step.json] [--engine-only on]
#include <ATen/ATen.h>

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "bench_util.h"
#include "turns.h"
#include "engine_step.h"
#include "kineto.h"
#include "profile.h"
#include "exec/device_check.h"
#include "jit/zoo.h"
#include "pipeline/pipeline.h"
#include "record/results.h"
#include "replay/cuda_graph.h"
#include "replay/eager.h"


namespace tv {
namespace {

// The mean milliseconds of `steps` calls, `repeats` times (each between the turns when they are
// on); every repeat goes to stderr.
template <typename Fn>
std::vector<double> step_ms(const std::string& label, bool cuda, int steps, int repeats, Fn&& fn,
                            bench::Turns* turns = nullptr) {
  std::vector<double> ms;
  std::string spans;
  auto seconds = [](std::chrono::steady_clock::time_point t) {
    return std::to_string(std::chrono::duration<double>(t.time_since_epoch()).count());
  };
  for (int r = 0; r < repeats; ++r) {
    if (turns) turns->before_repeat();
    if (cuda) bench::synchronize_cuda(0);
    auto start = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; ++s) fn();
    if (cuda) bench::synchronize_cuda(0);
    auto end = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(end - start).count() / steps);
    spans += " " + seconds(start) + "-" + seconds(end);
    if (turns) turns->after_repeat();
  }
  std::cerr << label << " ms per step, by repeat:";
  for (double m : ms) std::cerr << " " << m;
  // On the steady clock (CLOCK_MONOTONIC), to place a profiler's samples (`perf record -k
  // CLOCK_MONOTONIC`) in the repeats they belong to.
  std::cerr << "\n" << label << " repeats, steady clock seconds:" << spans << "\n";
  return ms;
}

double median(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

std::string json_list(const std::vector<double>& values) {
  std::string out = "[";
  for (double v : values) out += (out.size() > 1 ? ", " : "") + std::to_string(v);
  return out + "]";
}

std::string json_params(const std::map<std::string, std::string>& params) {
  std::string out = "{";
  for (const auto& [k, v] : params) out += (out.size() > 1 ? ", \"" : "\"") + k + "\": \"" + v + "\"";
  return out + "}";
}

int run(int argc, char** argv) {
  bench::BenchArgs args(argc, argv,
                        {"model", "device", "steps", "repeats", "warmup", "warmup-seconds", "generated-kernels",
                         "cpu", "turns", "profile", "kineto", "engine-only"});
  if (args.help) {
    std::cout << "Usage: tv_bench_step --model gpt --param layers=32 [--param key=value ...] [--device cpu|cuda] "
                 "[--steps 20] [--repeats 5] [--warmup 3] [--warmup-seconds 5]\n"
                 "                     [--generated-kernels on|off] [--cpu N] [--turns IN:OUT:first|second]\n"
                 "                     [--profile N] [--kineto FILE.json] [--engine-only on]\n";
    return 0;
  }
  std::string model = args.get("model", "gpt"), device = args.get("device", "cpu");
  const auto& params = args.params;
  int steps = args.get_int("steps", 20), repeats = args.get_int("repeats", 5), warmup = args.get_int("warmup", 3);
  std::string generated = args.get("generated-kernels", "on");
  if (generated != "on" && generated != "off")
    throw std::invalid_argument("--generated-kernels " + generated + ": write on or off");
  std::string engine_only = args.get("engine-only", "off");
  if (engine_only != "on" && engine_only != "off")
    throw std::invalid_argument("--engine-only " + engine_only + ": write on or off");
  bench::Turns turns(args.get("turns", ""));
  if (int cpu = args.get_int("cpu", -1); cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0)
      throw std::invalid_argument("--cpu " + std::to_string(cpu) + ": cannot pin the process there (" +
                                  std::strerror(errno) + "); give one of the CPUs `nproc` counts");
  }
  std::cerr << "on CPU " << sched_getcpu() << " at the start\n";
  bool cuda = device.rfind("cuda", 0) == 0;
  if (cuda) device = "cuda:0";
  if (auto why = exec::device_unavailable(device); !why.empty()) throw std::invalid_argument(why);
  auto model_params = params;
  model_params["device"] = device;
  jit::Module module = jit::make_model(model, model_params);
  PipelineSpec spec;
  spec.order = {"jit"};
  spec.device = device;
  TransformContext context;
  context.device = *Device::parse(device);
  auto built = build_pipeline(module, ValidatedOrder(spec.order), context);

  exec::ExecOptions options;
  options.device = context.device;
  options.generated_kernels = generated == "on";
  bench::EngineStep engine_step(module, built.stages, options);
  // Allocator, cuBLAS handles, generated kernels' compiles; then the machine's own warm-up.
  using Clock = std::chrono::steady_clock;
  auto warmup_end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(args.get_double("warmup-seconds", 5)));
  for (int w = 0; w < warmup || Clock::now() < warmup_end; ++w) {
    engine_step();
    if (cuda) bench::synchronize_cuda(0);
  }
  turns.ready();  // as the second of two, the first's first repeat waits for this
  std::vector<double> engine_repeats = step_ms("engine", cuda, steps, repeats, engine_step, &turns);
  turns.done();
  double engine_ms = median(engine_repeats);
  double eager_ms = -1;
  if (engine_only == "off") {
    eager_ms = median(step_ms("libtorch eager", cuda, steps, repeats, [&] {
      eager_reference(module, engine_step.inputs(), engine_step.cotangents());
    }));
    step_ms("engine again", cuda, steps, repeats, engine_step);
  }

  double graph_ms = -1;
  std::string graph_note = !cuda ? "CPU device" : engine_only == "on" ? "not run (--engine-only)" : "";
  if (cuda && engine_only == "off") {
    auto graph = run_step_as_cuda_graph([&] { return engine_step(); }, context.device, steps * repeats);
    if (graph.ran && graph.max_relative_difference > 1e-4)
      graph_note = "the replayed graph's numbers differ from the step's by " + std::to_string(graph.max_abs_difference) +
                   " (relative " + std::to_string(graph.max_relative_difference) + ")";
    else if (graph.ran)
      graph_ms = graph.graph_ms;
    else
      graph_note = graph.error;
  }
  if (int top = args.get_int("profile", 0); top > 0) bench::profile_step(engine_step, top);
  if (auto path = args.get("kineto", ""); !path.empty()) {
    bench::record_kineto(path, cuda, [&] {
      engine_step();
      if (cuda) bench::synchronize_cuda(0);
    });
    std::cerr << "kineto trace of one engine step: " << path << "\n";
  }
  std::cerr << "on CPU " << sched_getcpu() << " at the end\n";
  std::string config = model + " " + json_params(params);
  std::cout << "{\"bench\": \"step\", \"model\": \"" << model << "\", \"params\": " << json_params(params)
            << ", \"device\": \"" << device << "\", \"engine_ms\": " << engine_ms << ", \"libtorch_eager_ms\": " << eager_ms
            << ", \"engine_cuda_graph_ms\": " << graph_ms << ", \"steps\": " << steps << ", \"repeats\": " << repeats
            << ", \"engine_repeats_ms\": " << json_list(engine_repeats)
            << ", \"turns\": " << (turns.on() ? "true" : "false") << "}\n";
  std::cerr << "| " << config << " | " << device << " | " << engine_ms << " | " << eager_ms << " | "
            << (graph_ms > 0 ? std::to_string(graph_ms) : graph_note) << " |\n";
  return 0;
}

}  // namespace
}  // namespace tv

int main(int argc, char** argv) { return tv::bench::main_of("tv_bench_step", argc, argv, tv::run); }
