// Benchmarks of the engine on this machine's CPU (results in BENCHMARKS.md):
//  (a) the whole pipeline (acquire, autograd, passes; with ddp and fsdp too) for gpt of growing
//      depth: milliseconds, microseconds per bound symbol, forward/backward bound symbols;
//  (b) the steady-state forward+backward step of the executor against LibTorch eager (ratio);
//  (c) rematerialization's effect on gpt's saved-for-backward bytes.
#include <ATen/ATen.h>

#include <iostream>

#include "bench_util.h"
#include "exec/executor.h"
#include "jit/zoo.h"
#include "passes/remat.h"
#include "pipeline/pipeline.h"
#include "replay/eager.h"
#include "replay/replay.h"

using namespace tv;

namespace {

std::map<std::string, std::string> gpt(int layers) {
  return {{"layers", std::to_string(layers)}, {"d_model", "64"}, {"heads", "4"}, {"seq", "16"}, {"batch", "2"}};
}

BuiltPipeline build(const std::string& model, const std::map<std::string, std::string>& params,
                    std::vector<std::string> order) {
  auto m = jit::make_model(model, params);
  return build_pipeline(m, ValidatedOrder(std::move(order)), TransformContext{});
}

// `repeats` builds per row, the median reported (0: 3 below 32 layers, 1 from 32 up).
void pipeline_table(const std::vector<int>& depths, const std::vector<std::vector<std::string>>& orders, int repeats = 0) {
  std::cout << "| gpt layers | order | forward bsyms | backward bsyms | pipeline ms | us per bsym |\n| --- | --- | --- | --- | --- | --- |\n";
  for (int layers : depths)
    for (const auto& order : orders) {
      BuiltPipeline b;
      int n = repeats > 0 ? repeats : layers >= 32 ? 1 : 3;
      double us = bench::median_us(n, [&] { b = build("gpt", gpt(layers), order); });
      size_t f = b.stages.last(TraceKind::forward)->size(), bw = b.stages.last(TraceKind::backward)->size();
      std::string label;
      for (const auto& o : order) label += (label.empty() ? "" : ",") + o;
      std::cout << "| " << layers << " | " << label << " | " << f << " | " << bw << " | " << us / 1000 << " | "
                << us / (f + bw) << " |\n";
    }
}

void step_table() {
  std::cout << "\n| model | executor step ms | LibTorch eager step ms | ratio |\n| --- | --- | --- | --- |\n";
  for (auto [model, params] : {std::pair<std::string, std::map<std::string, std::string>>{"mlp", {}}, {"gpt", gpt(2)}}) {
    auto m = jit::make_model(model, params);
    auto b = build_pipeline(m, ValidatedOrder({"jit"}), TransformContext{});
    ReplayOptions o;
    o.record_proxy_stats = false;
    o.record_timings = false;
    double engine = bench::median_us(21, [&] { replay_rank(m, b, 0, o); });
    std::vector<at::Tensor> inputs;
    for (const auto& i : m.inputs) inputs.push_back(*i.value);
    auto outputs = eager_reference(m, inputs, {}).outputs;
    auto cot = make_cotangents(outputs, 1);
    double eager = bench::median_us(21, [&] { eager_reference(m, inputs, cot); });
    // replay_rank also runs the eager reference once per call: subtract it to get the engine's step.
    double step = engine - eager;
    std::cout << "| " << model << " | " << step / 1000 << " | " << eager / 1000 << " | " << step / eager << " |\n";
  }
}

void remat_table() {
  std::cout << "\n| gpt layers | saved bytes without remat | with remat |\n| --- | --- | --- |\n";
  for (int layers : {2, 8}) {
    auto plain = build("gpt", gpt(layers), {"jit"});
    auto remat = build("gpt", gpt(layers), {"jit", "remat"});
    std::cout << "| " << layers << " | " << plain.saved_bytes << " | " << remat.saved_bytes << " |\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  // `--pipeline LAYERS ORDER [BUILDS]`: that row of the first table alone, one build unless told
  // (for a profiler, and for tests/bench/pipeline_instructions.sh).
  if ((argc == 4 || argc == 5) && std::string(argv[1]) == "--pipeline") {
    std::vector<std::string> order;
    for (std::string rest = argv[3]; !rest.empty();) {
      auto comma = rest.find(',');
      order.push_back(rest.substr(0, comma));
      rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    }
    pipeline_table({std::stoi(argv[2])}, {order}, argc == 5 ? std::stoi(argv[4]) : 1);
    return 0;
  }
  if (argc != 1) {
    std::cerr << "usage: tv_bench_pipeline [--pipeline LAYERS ORDER [BUILDS]]   (e.g. --pipeline 32 jit,ddp)\n";
    return 2;
  }
  pipeline_table({1, 4, 16, 32, 96}, {{"jit"}, {"jit", "ddp"}, {"jit", "fsdp"}});
  step_table();
  remat_table();
  return 0;
}
