// --kineto FILE of the step benchmarks: the same step recorded by LibTorch's own profiler (Kineto,
// CUDA activity through CUPTI: every kernel and copy of every device of the process, with its
// stream) and saved as a Chrome trace. tests/bench/timeline.py summarises it (busy and idle time
// per stream, kernels, communication overlapped with compute); `bench_torch.py --kineto` writes
// the same for PyTorch, so the two timelines can be laid side by side. Header-only; for tests/bench.
#pragma once
#include <torch/csrc/autograd/profiler_kineto.h>

#include <functional>
#include <set>
#include <stdexcept>
#include <string>

namespace tv::bench {

// Runs `step` once under the profiler and writes the trace to `path`. `cuda`: record the devices'
// activity too (otherwise the host's operators only).
inline void record_kineto(const std::string& path, bool cuda, const std::function<void()>& step) {
  namespace prof = torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  std::set<ActivityType> activities{ActivityType::CPU};
  if (cuda) activities.insert(ActivityType::CUDA);
  torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO);
  prof::prepareProfiler(config, activities);
  prof::enableProfiler(config, activities);
  step();
  auto result = prof::disableProfiler();
  try {
    result->save(path);
  } catch (const c10::Error&) {
    throw std::runtime_error("--kineto " + path + ": this LibTorch was built without Kineto (USE_KINETO=0, as " +
                             "Debian's 1.13 is); use PyTorch's LibTorch, as the GPU machine's build does");
  }
}

}  // namespace tv::bench
