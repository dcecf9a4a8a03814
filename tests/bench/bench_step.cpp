// Replay step against eager, and the same step as a CUDA graph. Not a test: prints JSON lines
// (one per measure, read by tests/bench/run_gpu_benchmarks.sh) and a Markdown row.
// For a built-in model at the given parameters on one device:
//  - engine: the executor runs the final prologue, forward and backward (replay/step.h);
//  - libtorch_eager: eager_reference (LibTorch ops + autograd in C++) on the same weights, inputs
//    and cotangents;
//  - engine_cuda_graph (CUDA builds, CUDA device): the engine's step captured once with
//    at::cuda::CUDAGraph on a side stream and replayed; its outputs are checked against the
//    uncaptured step before it is timed.
// Each is the median over --repeats of the mean of --steps steps, synchronised at both ends.
// --profile N: after the timing, one more engine step with per-bound-symbol times (CUDA events on
// CUDA) prints its N costliest statements and the totals per symbol to stderr, so a ratio above
// target can be traced to the statements behind it.
// Usage: tv_bench_step --model gpt --param layers=32 [--param ...] [--device cuda] [--steps 20] [--repeats 5]
//        [--profile 25]
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "bench_util.h"
#include "exec/device_check.h"
#include "jit/zoo.h"
#include "pipeline/pipeline.h"
#include "replay/eager.h"
#include "replay/module_view.h"
#include "replay/step.h"

#ifdef TV_HAVE_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace tv {
namespace {

// Median over `repeats` of the mean milliseconds of `steps` calls.
template <typename Fn>
double median_step_ms(bool cuda, int steps, int repeats, Fn&& fn) {
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) {
    if (cuda) bench::synchronize_cuda(0);
    auto start = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; ++s) fn();
    if (cuda) bench::synchronize_cuda(0);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / steps);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// What a fused statement runs: "fusion3[ltorch.mul ltorch.add ...]"; other statements their name.
std::string statement_label(const BoundSymbol& b) {
  if (b.name().rfind("fusion", 0) != 0) return b.name();
  std::string out = b.name() + "[";
  for (size_t i = 0; i < b.subsymbols.size(); ++i) out += (i ? " " : "") + b.subsymbols[i].name();
  return out + "]";
}

// The `top` costliest statements of one timed step, then the time per symbol over the whole step.
void print_profile(const std::vector<SymbolTiming>& timings, const StageHistory& stages, int top) {
  double total = 0;
  std::map<std::string, std::pair<double, int>> per_symbol;
  std::vector<std::pair<double, std::string>> statements;
  for (const auto& t : timings) {
    auto trace = stages.last(t.trace == "backward" ? TraceKind::backward : TraceKind::forward);
    std::string label = trace && t.index < static_cast<int>(trace->body.size()) ? statement_label(trace->body[t.index]) : t.symbol;
    total += t.microseconds;
    per_symbol[t.symbol].first += t.microseconds;
    per_symbol[t.symbol].second += 1;
    statements.emplace_back(t.microseconds, t.trace + " " + t.output + " = " + label);
  }
  std::sort(statements.rbegin(), statements.rend());
  std::cerr << "profile: " << timings.size() << " statements, " << total / 1e3 << " ms"
            << (timings.empty() || !timings.front().device_timer ? " (host timer)" : " (CUDA events)") << "\n";
  for (int i = 0; i < top && i < static_cast<int>(statements.size()); ++i)
    std::cerr << "  " << statements[i].first / 1e3 << " ms  " << statements[i].second << "\n";
  std::vector<std::pair<double, std::string>> symbols;
  for (const auto& [name, v] : per_symbol) symbols.emplace_back(v.first, name + " x" + std::to_string(v.second));
  std::sort(symbols.rbegin(), symbols.rend());
  std::cerr << "per symbol:\n";
  for (int i = 0; i < top && i < static_cast<int>(symbols.size()); ++i)
    std::cerr << "  " << symbols[i].first / 1e3 << " ms  " << symbols[i].second << "\n";
}

std::string json_params(const std::map<std::string, std::string>& params) {
  std::string out = "{";
  for (const auto& [k, v] : params) out += (out.size() > 1 ? ", \"" : "\"") + k + "\": \"" + v + "\"";
  return out + "}";
}

int run(int argc, char** argv) {
  bench::BenchArgs args(argc, argv, {"model", "device", "steps", "repeats", "profile"});
  if (args.help) {
    std::cout << "Usage: tv_bench_step --model gpt --param layers=32 [--param key=value ...] [--device cpu|cuda] "
                 "[--steps 20] [--repeats 5] [--profile N]\n";
    return 0;
  }
  std::string model = args.get("model", "gpt"), device = args.get("device", "cpu");
  const auto& params = args.params;
  int steps = args.get_int("steps", 20), repeats = args.get_int("repeats", 5);
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
  auto built = build_pipeline(module, spec, context);

  JitModuleView view(module);
  exec::ExecOptions options;
  options.device = context.device;
  options.module = &view;
  exec::Executor executor(options);
  std::vector<at::Tensor> inputs;
  for (const auto& i : module.inputs) inputs.push_back(*i.value);
  auto first = step_forward(executor, built.stages, inputs);
  auto cotangents = make_cotangents(first.outputs, 1234);
  auto engine_step = [&] {
    auto f = step_forward(executor, built.stages, inputs);
    return std::make_pair(f.outputs, step_backward(executor, module, built.stages, f.saved, cotangents));
  };
  for (int w = 0; w < 3; ++w) engine_step();  // warm up (allocator, cuBLAS handles)
  double engine_ms = median_step_ms(cuda, steps, repeats, engine_step);
  double eager_ms = median_step_ms(cuda, steps, repeats, [&] { eager_reference(module, inputs, cotangents); });

  double graph_ms = -1;
  std::string graph_note = cuda ? "" : "CPU device";
#ifdef TV_HAVE_CUDA
  if (cuda) {
    try {
      auto want = engine_step();
      c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
      c10::cuda::CUDAStreamGuard guard(side);
      for (int w = 0; w < 3; ++w) engine_step();  // warm up on the capture stream
      at::cuda::CUDAGraph graph;
      std::pair<std::vector<at::Tensor>, std::vector<std::pair<std::string, at::Tensor>>> captured;
      graph.capture_begin();
      captured = engine_step();
      graph.capture_end();
      graph.replay();
      bench::synchronize_cuda(0);
      for (size_t k = 0; k < want.second.size(); ++k)
        if (want.second[k].second.defined() && !at::allclose(captured.second[k].second, want.second[k].second, 1e-4, 1e-5))
          throw std::runtime_error("the replayed graph's gradient of " + want.second[k].first + " differs from the step's");
      graph_ms = median_step_ms(true, steps, repeats, [&] { graph.replay(); });
    } catch (const std::exception& e) {
      graph_note = std::string("capture failed: ") + e.what();
    }
  }
#endif
  if (int top = args.get_int("profile", 0); top > 0) {
    std::vector<SymbolTiming> timings;
    std::string current;
    options.on_timing = timing_recorder(timings, current);
    exec::Executor timed(options);
    auto hook = [&](TraceKind kind) { current = std::string(trace_kind_name(kind)); };
    auto f = step_forward(timed, built.stages, inputs, hook);
    step_backward(timed, module, built.stages, f.saved, cotangents, hook);
    print_profile(timings, built.stages, top);
  }
  std::string config = model + " " + json_params(params);
  std::cout << "{\"bench\": \"step\", \"model\": \"" << model << "\", \"params\": " << json_params(params)
            << ", \"device\": \"" << device << "\", \"engine_ms\": " << engine_ms << ", \"libtorch_eager_ms\": " << eager_ms
            << ", \"engine_cuda_graph_ms\": " << graph_ms << ", \"steps\": " << steps << ", \"repeats\": " << repeats << "}\n";
  std::cerr << "| " << config << " | " << device << " | " << engine_ms << " | " << eager_ms << " | "
            << (graph_ms > 0 ? std::to_string(graph_ms) : graph_note) << " |\n";
  return 0;
}

}  // namespace
}  // namespace tv

int main(int argc, char** argv) { return tv::bench::main_of("tv_bench_step", argc, argv, tv::run); }
