// Helpers for the benchmarks: the median of repeated runs, in microseconds; percentiles; the
// command line ("--name value" options, repeatable "--param key=value", --help).
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef TV_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace tv::bench {

// Waits for the work queued on CUDA device `device` (nothing without CUDA).
inline void synchronize_cuda(int device) {
#ifdef TV_HAVE_CUDA
  cudaSetDevice(device);
  cudaDeviceSynchronize();
#endif
  (void)device;
}

// main() of a benchmark: run(argc, argv), or its exception as "NAME: what" on stderr and exit 2.
template <typename Run>
int main_of(const char* name, int argc, char** argv, Run&& run) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 2;
  }
}

template <typename Fn>
double median_us(int repeats, Fn&& fn) {
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    fn();
    times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// The p-th percentile (0..100, nearest rank) of `values`; 0 when there are none.
inline double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  return values[std::min(values.size(), std::max<size_t>(rank, 1)) - 1];
}

// A count given on the command line (layers, builds, frames, megabytes): a whole number of at least
// 1, else std::invalid_argument naming `what`.
inline int count(const std::string& text, const std::string& what) {
  size_t used = 0;
  int n = 0;
  try {
    n = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || n < 1)
    throw std::invalid_argument(what + " must be a whole number of at least 1, not '" + text + "'");
  return n;
}

// The benchmarks' command line: `--name value` pairs (names from `known`), `--param key=value`
// (repeatable, into params), `--help`/`-h`. Anything else throws std::invalid_argument.
struct BenchArgs {
  std::map<std::string, std::string> options;  // "steps" -> "20"
  std::map<std::string, std::string> params;   // model parameters
  bool help = false;

  BenchArgs(int argc, char** argv, const std::set<std::string>& known) {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--help" || a == "-h") {
        help = true;
        continue;
      }
      if (a.rfind("--", 0) != 0 || (a != "--param" && !known.count(a.substr(2))))
        throw std::invalid_argument("unknown argument " + a + " (see --help)");
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      std::string value = argv[++i];
      if (a == "--param") {
        auto eq = value.find('=');
        if (eq == std::string::npos) throw std::invalid_argument("--param " + value + ": write key=value");
        params[value.substr(0, eq)] = value.substr(eq + 1);
      } else {
        options[a.substr(2)] = value;
      }
    }
  }
  std::string get(const std::string& name, const std::string& fallback) const {
    auto it = options.find(name);
    return it == options.end() ? fallback : it->second;
  }
  int get_int(const std::string& name, int fallback) const { return std::stoi(get(name, std::to_string(fallback))); }
  int get_count(const std::string& name, int fallback) const {
    return count(get(name, std::to_string(fallback)), "--" + name);
  }
  double get_double(const std::string& name, double fallback) const {
    return std::stod(get(name, std::to_string(fallback)));
  }
};

}  // namespace tv::bench
