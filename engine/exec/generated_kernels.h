// Runs the generated elementwise kernels of fusion regions (codegen/elementwise.h): on CUDA through
// ATen's jiterator (at::cuda::CompileAndLaunchKernel: NVRTC compiles each source once per process,
// and caches it on disk; TensorIterator broadcasts the inputs and allocates the outputs), on the CPU
// by evaluating the kernel's program (exec/pointwise_cpu.h).
// Contract: generated_kernels_available(device) is true on the CPU, and on CUDA when built with
// CUDA. launch_generated takes one tensor per kernel input, in order, all on the CPU or all on
// CUDA, and returns one tensor per kernel output, in order; the caller checks the inputs against
// the kernel first (inputs_match: devices, dtypes, and on the CPU the shapes the evaluator reads).
#pragma once
#include <ATen/core/Tensor.h>

#include <vector>

#include "codegen/elementwise.h"
#include "ir/dtype.h"

namespace tv::exec {

bool generated_kernels_available(const Device& device);
// CUDA: CUDA tensors of the kernel's dtype (bool where the kernel reads a condition). CPU:
// pointwise_cpu_applies.
bool inputs_match(const codegen::ElementwiseKernel& kernel, const std::vector<at::Tensor>& inputs);
std::vector<at::Tensor> launch_generated(const codegen::ElementwiseKernel& kernel, const std::vector<at::Tensor>& inputs);

}  // namespace tv::exec
