// Generated elementwise kernels (codegen/elementwise.h) on the CPU: the kernel's program evaluated
// over the output's elements a cache-sized block at a time, in one pass over memory, with no
// tensor for the values that stay inside the kernel (a fusion region's gelu backward is ten ATen
// ops, ten passes and ten allocations member by member).
// Contract: pointwise_cpu_applies(kernel, inputs) is true when every input is a defined CPU tensor
// of the kernel's dtype, f32 or f64 (bool where the kernel reads a condition), and either has the
// shape of the broadcast of all inputs and is contiguous, or has one element; otherwise the caller
// runs the members one by one. run_pointwise_cpu returns one new contiguous tensor of that shape per
// kernel output, in order. Numbers are rounded to the dtype before use and every instruction
// rounds to it, as ATen's CPU kernels do member by member (no contraction into fused multiply-adds);
// exp, log, erf, tanh and pow are the C library's, vectorised through glibc's libmvec where the
// build found it (within a few ulps of ATen's own vectorised ones). Blocks run in parallel under
// at::parallel_for, as ATen's elementwise kernels do.
#pragma once
#include <ATen/core/Tensor.h>

#include <vector>

#include "codegen/elementwise.h"

namespace tv::exec {

bool pointwise_cpu_applies(const codegen::ElementwiseKernel& kernel, const std::vector<at::Tensor>& inputs);
std::vector<at::Tensor> run_pointwise_cpu(const codegen::ElementwiseKernel& kernel, const std::vector<at::Tensor>& inputs);

}  // namespace tv::exec
