#include "exec/symbol_timer.h"

#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>

#ifdef TV_HAVE_CUDA
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#endif

namespace tv::exec {
namespace {

class HostTimer final : public SymbolTimer {
 public:
  void begin(size_t index) override {
    auto now = Clock::now();
    if (times_.empty()) first_ = now;
    start_ = now;
    times_.push_back({index, std::chrono::duration<double>(now - first_).count(), 0, false});
  }
  void end(size_t) override { times_.back().seconds = std::chrono::duration<double>(Clock::now() - start_).count(); }
  std::vector<SymbolTime> finish() override { return std::exchange(times_, {}); }
  void reset() override { times_.clear(); }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point first_, start_;
  std::vector<SymbolTime> times_;
};

#ifdef TV_HAVE_CUDA
void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA event timer: ") + what + ": " + cudaGetErrorString(e));
}

// Events are created once and reused across runs; a run needs two per bound symbol.
class CudaEventTimer final : public SymbolTimer {
 public:
  explicit CudaEventTimer(int device) : device_(device) {}
  ~CudaEventTimer() override {
    for (auto e : events_) cudaEventDestroy(e);
  }
  void begin(size_t index) override {
    indices_.push_back(index);
    record(2 * indices_.size() - 2);
  }
  void end(size_t) override { record(2 * indices_.size() - 1); }
  std::vector<SymbolTime> finish() override {
    std::vector<SymbolTime> out;
    if (indices_.empty()) return out;
    cuda_check(cudaEventSynchronize(events_[2 * indices_.size() - 1]), "cudaEventSynchronize");
    for (size_t k = 0; k < indices_.size(); ++k) {
      float since_first = 0, duration = 0;
      cuda_check(cudaEventElapsedTime(&since_first, events_[0], events_[2 * k]), "cudaEventElapsedTime");
      cuda_check(cudaEventElapsedTime(&duration, events_[2 * k], events_[2 * k + 1]), "cudaEventElapsedTime");
      out.push_back({indices_[k], since_first * 1e-3, duration * 1e-3, true});
    }
    indices_.clear();
    return out;
  }
  void reset() override { indices_.clear(); }

 private:
  void record(size_t slot) {
    while (events_.size() <= slot) {
      cudaEvent_t e;
      cuda_check(cudaEventCreate(&e), "cudaEventCreate");
      events_.push_back(e);
    }
    auto stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_)).stream();
    cuda_check(cudaEventRecord(events_[slot], stream), "cudaEventRecord");
  }
  int device_;
  std::vector<cudaEvent_t> events_;
  std::vector<size_t> indices_;
};
#endif

}  // namespace

std::unique_ptr<SymbolTimer> make_symbol_timer(const Device& device) {
#ifdef TV_HAVE_CUDA
  if (device.kind == Device::Kind::cuda) return std::make_unique<CudaEventTimer>(device.index);
#endif
  return std::make_unique<HostTimer>();
}

}  // namespace tv::exec
