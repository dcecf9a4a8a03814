// --kineto FILE of the step benchmarks: the same step recorded by LibTorch's own profiler (Kineto,
// CUDA activity through CUPTI: every kernel and copy of every device of the process, with its
// stream) and saved as a Chrome trace. tests/bench/timeline.py summarises it (busy and idle time
// per stream, kernels, communication overlapped with compute); `bench_torch.py --kineto` writes
// the same for PyTorch, so the two timelines can be laid side by side. Header-only; for tests/bench.
#pragma once
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

namespace tv::bench {

// The user scope around the recorded step; timeline.py keeps to what it holds.
inline constexpr const char* kKinetoStepScope = "tv_bench step";

namespace detail {
inline std::set<torch::profiler::impl::ActivityType> kineto_activities(bool cuda) {
  using torch::profiler::impl::ActivityType;
  std::set<ActivityType> activities{ActivityType::CPU};
  if (cuda) activities.insert(ActivityType::CUDA);
  return activities;
}
inline torch::profiler::impl::ProfilerConfig kineto_config() {
  return torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::KINETO);
}
inline void start_kineto(bool cuda) {
  torch::autograd::profiler::prepareProfiler(kineto_config(), kineto_activities(cuda));
  torch::autograd::profiler::enableProfiler(kineto_config(), kineto_activities(cuda));
}
inline void stop_kineto(const std::string& path) {
  auto result = torch::autograd::profiler::disableProfiler();
  try {
    result->save(path);
  } catch (const c10::Error&) {
    throw std::runtime_error("--kineto " + path + ": this LibTorch was built without Kineto (USE_KINETO=0, as " +
                             "Debian's 1.13 is); use PyTorch's LibTorch, as the GPU machine's build does");
  }
}
}  // namespace detail

// Runs `step` once under the profiler, inside the user scope kKinetoStepScope, and writes the trace
// to `path`. `cuda`: record the devices' activity too (otherwise the host's operators only). The
// profiler's first recorded call carries its start (about 2 ms on CUDA): a warm-up call before the
// scope takes it. On the thread that loaded LibTorch (Kineto refuses to start elsewhere); see
// KinetoOnMainThread for work on other threads.
inline void record_kineto(const std::string& path, bool cuda, const std::function<void()>& step) {
  detail::start_kineto(cuda);
  at::zeros({1}, at::TensorOptions().device(cuda ? at::kCUDA : at::kCPU));
  {
    RECORD_USER_SCOPE(kKinetoStepScope);
    step();
  }
  detail::stop_kineto(path);
}

// For work on other threads (the ranks of a World): serve() runs the work on a thread of its own
// and starts and stops the profiler on the calling (main) thread when a worker asks with start()
// and stop(), which block until it is done. The devices' activity of every thread is recorded.
class KinetoOnMainThread {
 public:
  explicit KinetoOnMainThread(std::string path) : path_(std::move(path)) {}

  void start() { request(State::start_asked, State::recording); }
  void stop() { request(State::stop_asked, State::saved); }

  void serve(const std::function<void()>& work) {
    std::exception_ptr failure;
    std::thread worker([&] {
      try {
        work();
      } catch (...) {
        failure = std::current_exception();
      }
      std::lock_guard lock(mu_);
      finished_ = true;
      cv_.notify_all();
    });
    std::unique_lock lock(mu_);
    while (!finished_) {
      cv_.wait(lock, [&] { return finished_ || state_ == State::start_asked || state_ == State::stop_asked; });
      if (state_ == State::start_asked || state_ == State::stop_asked) {
        try {
          if (state_ == State::start_asked)
            detail::start_kineto(true);
          else
            detail::stop_kineto(path_);
          state_ = state_ == State::start_asked ? State::recording : State::saved;
        } catch (...) {
          error_ = std::current_exception();
          state_ = State::failed;
        }
        cv_.notify_all();
      }
    }
    lock.unlock();
    worker.join();
    if (failure) std::rethrow_exception(failure);
  }

 private:
  enum class State { idle, start_asked, recording, stop_asked, saved, failed };

  void request(State ask, State until) {
    std::unique_lock lock(mu_);
    state_ = ask;
    cv_.notify_all();
    cv_.wait(lock, [&] { return state_ == until || state_ == State::failed; });
    if (state_ == State::failed) std::rethrow_exception(error_);
  }

  std::string path_;
  std::mutex mu_;
  std::condition_variable cv_;
  State state_ = State::idle;
  bool finished_ = false;
  std::exception_ptr error_;
};

}  // namespace tv::bench
