// Benchmark: acquisition plus printing of `gpt` for several depths (microseconds per bound
// symbol), the parse time of the largest Thunder fixture, of traces of 10 000 to 40 000
// parameters, and the print time of long traces (the GUI's trace view prints a trace before its
// first frame). Results go to BENCHMARKS.md.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "bench_util.h"
#include "generated_trace.h"
#include "format/parser.h"
#include "format/printer.h"
#include "jit/acquire.h"
#include "jit/zoo.h"

using namespace tv;

namespace {
size_t count_bound_symbols(const Trace& t) {
  size_t n = 0;
  walk(t.body, [&](const BoundSymbol&, int) { ++n; });
  return n;
}
}  // namespace

int run(int argc, char** argv) {
  if (bench::BenchArgs(argc, argv, {}).help) {
    std::cout << "usage: tv_bench_acquire   (no options)\n"
                 "  acquisition plus printing of gpt at 1, 8, 32 and 96 layers, the parse of the largest Thunder\n"
                 "  fixture, of generated traces of 10 000 to 40 000 parameters, and the print of long traces\n";
    return 0;
  }
  std::vector<int> layers = {1, 8, 32, 96};
  std::cout << "| gpt layers | top-level bound symbols | all levels | acquire+print ms | us per bound symbol (all levels) |\n"
            << "| --- | --- | --- | --- | --- |\n";
  for (int l : layers) {
    auto module = jit::make_model("gpt", {{"layers", std::to_string(l)}});
    size_t top = 0, all = 0;
    double us = bench::median_us(l >= 32 ? 3 : 7, [&] {
      auto a = jit::acquire(module);
      auto text = print_trace(*a.computation);
      top = a.computation->body.size();
      all = count_bound_symbols(*a.computation);
    });
    std::cout << "| " << l << " | " << top << " | " << all << " | " << us / 1000 << " | " << us / all << " |\n";
  }
  std::filesystem::path largest;
  for (const char* dir : {TV_FIXTURES_DIR, TV_CPU_FIXTURES_DIR})
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".txt" && (largest.empty() || e.file_size() > std::filesystem::file_size(largest)))
        largest = e.path();
  std::ifstream in(largest);
  std::stringstream ss;
  ss << in.rdbuf();
  auto text = ss.str();
  double us = bench::median_us(201, [&] { parse_trace(text); });
  std::cout << "\nparse of the largest fixture " << largest.filename().string() << " (" << text.size()
            << " bytes): " << us << " us (median of 201)\n";

  // Parameters with one input comment each (a parameter-heavy prologue): parse time must grow
  // linearly.
  std::cout << "\n| parameters | parse ms | us per parameter |\n| --- | --- | --- |\n";
  for (int n : {10000, 20000, 40000}) {
    std::string trace = "\ndef computation(";
    for (int i = 0; i < n; ++i) trace += (i ? ", p" : "p") + std::to_string(i);
    trace += "):";
    for (int i = 0; i < n; ++i) trace += "\n  # p" + std::to_string(i) + ": \"cpu f32[2, 5]\"";
    trace += "\n  return p0";
    double parse_us = bench::median_us(5, [&] { parse_trace(trace); });
    std::cout << "| " << n << " | " << parse_us / 1000 << " | " << parse_us / n << " |\n";
  }

  // The GUI benchmark's long trace (generated_trace.h: element-wise calls, each with its prims
  // subsymbol, a source comment every 8th), printed with every level.
  std::cout << "\n| statements | printed lines | print ms | ns per line |\n| --- | --- | --- | --- |\n";
  for (int n : {4444, 44440}) {
    auto parsed = parse_trace(bench::generated_trace_text(n, /*annotated=*/true));
    if (!parsed) {
      std::cerr << "the generated trace does not parse: " << parsed.error->message << "\n";
      return 1;
    }
    size_t lines = 0;
    double print_us = bench::median_us(7, [&] {
      auto printed = print_trace(*parsed.trace);
      lines = std::count(printed.begin(), printed.end(), '\n') + 1;
    });
    std::cout << "| " << n << " | " << lines << " | " << print_us / 1000 << " | " << print_us * 1000 / lines << " |\n";
  }
  return 0;
}

int main(int argc, char** argv) { return bench::main_of("tv_bench_acquire", argc, argv, run); }
