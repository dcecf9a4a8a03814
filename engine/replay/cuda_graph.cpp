#include "replay/cuda_graph.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <tuple>


#ifdef TV_HAVE_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace tv {

#ifdef TV_HAVE_CUDA
namespace {

// Largest |a - b| over every output and gradient of two results of the same step, absolute and
// relative to each tensor's largest |b| (at least 1).
std::pair<double, double> max_difference(const StepTensors& a, const StepTensors& b) {
  double worst = 0, worst_relative = 0;
  auto compare = [&](const at::Tensor& x, const at::Tensor& y) {
    if (!x.defined() || !y.defined() || x.numel() == 0) return;
    if (x.sizes() != y.sizes()) throw std::runtime_error("the replayed graph returned a tensor of another shape");
    at::Tensor yd = y.to(at::kDouble);
    double difference = (x.to(at::kDouble) - yd).abs().max().item<double>();
    worst = std::max(worst, difference);
    worst_relative = std::max(worst_relative, difference / std::max(1.0, yd.abs().max().item<double>()));
  };
  for (size_t i = 0; i < a.outputs.size() && i < b.outputs.size(); ++i) compare(a.outputs[i], b.outputs[i]);
  for (size_t i = 0; i < a.gradients.size() && i < b.gradients.size(); ++i)
    compare(a.gradients[i], b.gradients[i]);
  return {worst, worst_relative};
}

template <typename Fn>
double milliseconds_per_call(int calls, Fn&& fn) {
  c10::cuda::device_synchronize();
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) fn();
  c10::cuda::device_synchronize();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / calls;
}

}  // namespace
#endif

CudaGraphRun run_step_as_cuda_graph(const std::function<StepTensors()>& step, const Device& device, int steps) {
  CudaGraphRun run;
  run.steps = std::max(steps, 1);
  if (device.kind != Device::Kind::cuda) {
    run.error = "a CUDA graph needs a CUDA device (--device cuda), not " + device.str();
    return run;
  }
#ifdef TV_HAVE_CUDA
  try {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device.index));
    StepTensors plain = step();
    run.step_ms = milliseconds_per_call(run.steps, step);
    c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, static_cast<c10::DeviceIndex>(device.index));
    at::cuda::CUDAGraph graph;
    StepTensors captured;
    {
      c10::cuda::CUDAStreamGuard on_side(side);
      for (int w = 0; w < 3; ++w) step();  // allocator pools and library handles for this stream
      graph.capture_begin();
      captured = step();
      graph.capture_end();
    }
    graph.replay();
    c10::cuda::device_synchronize();
    std::tie(run.max_abs_difference, run.max_relative_difference) = max_difference(captured, plain);
    run.graph_ms = milliseconds_per_call(run.steps, [&] { graph.replay(); });
    run.ran = true;
  } catch (const c10::Error& e) {
    run.error = std::string("capturing the step as a CUDA graph failed: ") + e.what_without_backtrace();
  } catch (const std::exception& e) {
    run.error = std::string("capturing the step as a CUDA graph failed: ") + e.what();
  }
#else
  (void)step;
  run.error = "this build has no CUDA (configure with TV_CUDA=ON where CUDA and NCCL are installed)";
#endif
  return run;
}

}  // namespace tv
