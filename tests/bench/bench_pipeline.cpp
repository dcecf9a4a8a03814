// Benchmarks of the engine on this machine's CPU (results in BENCHMARKS.md):
//  (a) the whole pipeline (acquire, autograd, passes; with ddp and fsdp too) for gpt of growing
//      depth: milliseconds, microseconds per bound symbol, forward/backward bound symbols, and the
//      model's making beside it;
//  (b) the steady-state forward+backward step of the executor against LibTorch eager (ratio);
//  (c) rematerialization's effect on gpt's saved-for-backward bytes.
#include <ATen/ATen.h>

#include <malloc.h>

#include <cstdlib>
#include <iostream>
#include <stdexcept>

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

// `repeats` builds per row, the median reported (0: 3 below 32 layers, 1 from 32 up). A build is
// the pipeline of a model made before it (acquisition, autograd, the transforms, the passes); the
// model's making (its weights drawn, 19 MB at 96 layers) is timed apart, as "model ms", and so is
// the freeing of a build (every stage's trace), as "free ms".
void pipeline_table(const std::vector<int>& depths, const std::vector<std::vector<std::string>>& orders, int repeats = 0) {
  std::cout << "| gpt layers | order | forward bsyms | backward bsyms | pipeline ms | us per bsym | model ms | free ms |\n"
               "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (int layers : depths)
    for (const auto& order : orders) {
      BuiltPipeline b;
      int n = repeats > 0 ? repeats : layers >= 32 ? 1 : 3;
      std::vector<double> model_us, build_us, free_us;
      auto free_build = [&] { free_us.push_back(bench::median_us(1, [&] { b = BuiltPipeline{}; })); };
      for (int i = 0; i < n; ++i) {
        jit::Module m;
        model_us.push_back(bench::median_us(1, [&] { m = jit::make_model("gpt", gpt(layers)); }));
        if (i > 0) free_build();
        build_us.push_back(bench::median_us(1, [&] { b = build_pipeline(m, ValidatedOrder(order), TransformContext{}); }));
      }
      size_t f = b.stages.last(TraceKind::forward)->size(), bw = b.stages.last(TraceKind::backward)->size();
      free_build();
      for (auto* v : {&build_us, &model_us, &free_us}) std::sort(v->begin(), v->end());
      const double us = build_us[n / 2];
      std::string label;
      for (const auto& o : order) label += (label.empty() ? "" : ",") + o;
      std::cout << "| " << layers << " | " << label << " | " << f << " | " << bw << " | " << us / 1000 << " | "
                << us / (f + bw) << " | " << model_us[n / 2] / 1000 << " | " << free_us[n / 2] / 1000 << " |\n";
    }
}

// `--passes`: where a row's time goes. Per stage in pipeline order (kind, pass), the median over
// `builds` builds of the stage's milliseconds and of its microseconds per bound symbol of the trace
// it made: a pass whose per-symbol time grows with depth is one whose walk outgrows the cache. A
// pass that made several traces (acquisition, autograd) shows its whole time on each. The last row
// is the whole build (what the stages leave out: the transforms' setup between them).
void pass_table(int layers, const std::vector<std::string>& order, int builds) {
  std::vector<std::vector<double>> ms;
  std::vector<std::pair<std::string, size_t>> rows;  // "kind: pass", bound symbols
  std::vector<double> whole_ms;
  size_t final_bsyms = 0;
  for (int i = 0; i < builds; ++i) {
    auto m = jit::make_model("gpt", gpt(layers));
    BuiltPipeline b;
    whole_ms.push_back(bench::median_us(1, [&] { b = build_pipeline(m, ValidatedOrder(order), TransformContext{}); }) / 1000);
    final_bsyms = b.stages.last(TraceKind::forward)->size() + b.stages.last(TraceKind::backward)->size();
    size_t row = 0;
    for (TraceKind kind : kTraceKinds)
      for (const auto& stage : b.stages.of(kind)) {
        if (i == 0) {
          rows.emplace_back(std::string(trace_kind_name(kind)) + ": " + stage.pass, stage.trace->size());
          ms.emplace_back();
        }
        ms[row++].push_back(stage.milliseconds);
      }
  }
  std::cout << "| stage | bound symbols | ms | us per bsym |\n| --- | --- | --- | --- |\n";
  for (size_t r = 0; r < rows.size(); ++r) {
    std::sort(ms[r].begin(), ms[r].end());
    const double median = ms[r][ms[r].size() / 2];
    std::cout << "| " << rows[r].first << " | " << rows[r].second << " | " << median << " | "
              << median * 1000 / std::max<size_t>(rows[r].second, 1) << " |\n";
  }
  std::sort(whole_ms.begin(), whole_ms.end());
  const double whole = whole_ms[whole_ms.size() / 2];
  std::cout << "| the whole build (final forward and backward) | " << final_bsyms << " | " << whole << " | "
            << whole * 1000 / std::max<size_t>(final_bsyms, 1) << " |\n";
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

// Touches `megabytes` of the heap and keeps it there for the builds: glibc then takes blocks up to
// 32 MB from the heap and does not give the heap's top back, so the builds run on memory the
// process has touched.
// On a virtual machine whose host discards the pages a guest frees (free page reporting), a
// process's first touch of fresh memory can cost more than the work it holds; with a warm heap the
// rows show the engine without that cost. Prints what the touch took.
void warm_heap(size_t megabytes) {
  constexpr size_t kChunk = size_t{16} << 20;  // under the largest mmap threshold glibc takes (32 MB)
  mallopt(M_MMAP_THRESHOLD, 2 * kChunk);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  double us = bench::median_us(1, [&] {
    std::vector<volatile char*> chunks;
    for (size_t done = 0; done < (megabytes << 20); done += kChunk) {
      auto* chunk = static_cast<volatile char*>(std::malloc(kChunk));
      if (!chunk) throw std::runtime_error("--warm-heap: no memory for " + std::to_string(megabytes) + " MB");
      for (size_t i = 0; i < kChunk; i += 4096) chunk[i] = 1;
      chunks.push_back(chunk);
    }
    for (volatile char* chunk : chunks) std::free(const_cast<char*>(chunk));
  });
  std::cerr << "warm heap: " << megabytes << " MB touched in " << us / 1000 << " ms\n";
}

int run(std::vector<std::string> args) {
  // `--warm-heap MB` first: the builds on a heap already touched (see warm_heap).
  if (args.size() >= 2 && args[0] == "--warm-heap") {
    warm_heap(bench::count(args[1], "MB"));
    args.erase(args.begin(), args.begin() + 2);
  }
  // `--pipeline LAYERS ORDER [BUILDS]`: that row of the first table alone, one build unless told
  // (for a profiler, and for tests/bench/pipeline_instructions.sh).
  const bool passes = !args.empty() && args[0] == "--passes";
  if ((args.size() == 3 || args.size() == 4) && (args[0] == "--pipeline" || passes)) {
    std::vector<std::string> order;
    for (std::string rest = args[2]; !rest.empty();) {
      auto comma = rest.find(',');
      order.push_back(rest.substr(0, comma));
      rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    }
    const int layers = bench::count(args[1], "LAYERS");
    if (passes)
      pass_table(layers, order, args.size() == 4 ? bench::count(args[3], "BUILDS") : 3);
    else
      pipeline_table({layers}, {order}, args.size() == 4 ? bench::count(args[3], "BUILDS") : 1);
    return 0;
  }
  if (!args.empty()) {
    const bool help = args[0] == "--help" || args[0] == "-h";
    (help ? std::cout : std::cerr)
        << "usage: tv_bench_pipeline [--warm-heap MB] [--pipeline|--passes LAYERS ORDER [BUILDS]]"
           "   (e.g. --pipeline 32 jit,ddp)\n"
           "  with no option: the depth table (gpt of 1 to 96 layers, three orders), the step and\n"
           "  rematerialization tables; --pipeline: one row of the depth table; --passes: that\n"
           "  build's time stage by stage\n";
    return help ? 0 : 2;
  }
  pipeline_table({1, 4, 16, 32, 96}, {{"jit"}, {"jit", "ddp"}, {"jit", "fsdp"}});
  step_table();
  remat_table();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {  // a bad count or order: say which, and how to ask for the usage
    std::cerr << "tv_bench_pipeline: " << e.what() << " (tv_bench_pipeline --help)\n";
    return 2;
  }
}
