// Runs the generated elementwise kernels of fusion regions (codegen/elementwise.h) on CUDA through
// ATen's jiterator (at::cuda::CompileAndLaunchKernel: NVRTC compiles each source once per process,
// and caches it on disk; TensorIterator broadcasts the inputs and allocates the outputs).
// Contract: generated_kernels_available() is true when built with CUDA. launch_generated takes one
// CUDA tensor per kernel input, in order, and returns one tensor per kernel output, in order; the
// caller checks the inputs' devices and dtypes against the kernel first (inputs_match).
#pragma once
#include <ATen/core/Tensor.h>

#include <vector>

#include "codegen/elementwise.h"

namespace tv::exec {

bool generated_kernels_available();
// The inputs are CUDA tensors of the kernel's dtype (bool where the kernel reads a condition).
bool inputs_match(const codegen::ElementwiseKernel& kernel, const std::vector<at::Tensor>& inputs);
std::vector<at::Tensor> launch_generated(const codegen::ElementwiseKernel& kernel, const std::vector<at::Tensor>& inputs);

}  // namespace tv::exec
