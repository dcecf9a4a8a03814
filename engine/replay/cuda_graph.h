// CUDA graph replay: a whole training step (prologue → forward → backward) captured once as a CUDA
// graph and replayed, so one launch replaces the executor's per-op launches (what removes the host
// overhead of a model of many small ops). Used by `thunder-viz run --cuda-graph` and the benchmarks.
// Contract: `run_step_as_cuda_graph(step, device, steps)` calls `step` once on the current stream
// (the plain result) and `steps` more times to time it, then warms it up on a side stream, captures
// one call there with at::cuda::CUDAGraph, replays it once and compares what the replay wrote with
// the plain result, then times `steps` replays. Times are milliseconds per step, both ends
// synchronised. The step must be capturable: static inputs, no host synchronisation, no
// collectives that wait on the host (a DDP step is not). Nothing throws: a capture that fails, a
// CPU device or a build without CUDA gives CudaGraphRun::error, with the plain time when it was
// measured.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "ir/dtype.h"
#include "record/results.h"

namespace tv {

struct StepTensors {
  std::vector<at::Tensor> outputs;
  std::vector<at::Tensor> gradients;  // one per computation argument (step_gradients); undefined when none
};

CudaGraphRun run_step_as_cuda_graph(const std::function<StepTensors()>& step, const Device& device, int steps);

}  // namespace tv
