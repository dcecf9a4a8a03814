// Timing helpers for the benchmarks: the median of repeated runs, in microseconds.
#pragma once
#include <algorithm>
#include <chrono>
#include <vector>

namespace tv::bench {

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

}  // namespace tv::bench
