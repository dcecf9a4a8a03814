// Small matrix products on CUDA as one cuBLASLt call each, with a plan kept per shape; the smallest
// (up to kSmallProductWork multiply-adds) as one kernel of runtime/small_kernels.h, whose host cost
// is its launch.
// When a step is host-bound, a small gemm's cost is the host's: LibTorch's mm and addmm ask
// cuBLAS(Lt) to choose an algorithm at every call, often choose split-K (a second kernel that sums
// the parts), and addmm over a broadcast bias first copies the bias into the output (a third).
// Here the algorithm is chosen once per shape, layout and alignment, with no workspace (so no
// split-K), and the bias is added by the gemm's epilogue: one launch per product.
// Contract: small_gemm(a, b, bias) returns a @ b (+ bias added to every row) as a new contiguous
// [m, n] tensor, or an undefined tensor when it does not apply: not CUDA or not this build's,
// a dtype other than f32/bf16/f16, operands on different devices or of different dtypes, more
// than kSmallGemmOutputs outputs or kSmallGemmDepth of depth, strides cuBLASLt cannot read (where
// the product is larger than the kernel takes; the kernel reads any strides), an
// operand autograd would record (grad mode on and it requires grad) or without storage (a batched
// tensor), or no algorithm for the shape. The caller then runs ATen. small_linear(x, w, bias) is
// a linear layer's x @ w^T (+ bias) (+ residual) for x [..., k] (a matrix of any strides, more
// dimensions contiguous) and w [n, k], shaped [..., n], under the same conditions; it reads both where they lie, making no view of them. A
// residual (a contiguous tensor of the output's shape, dtype and device) is added by the gemm's
// epilogue (beta = 1), as `linear(x, w, bias) + residual` rounded once; any other residual declines. Outputs come from the
// CUDA caching allocator directly, as at::empty's would. Thread-safe; plans live for the process.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace tv::exec {

constexpr int64_t kSmallGemmOutputs = int64_t{1} << 18;  // m * n
constexpr int64_t kSmallGemmDepth = 1 << 14;             // k

at::Tensor small_gemm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& bias = {});
at::Tensor small_linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias = {},
                        const at::Tensor& residual = {});

// Whether small_gemm can run at all here (a build with CUDA and cuBLASLt).
bool small_gemm_available();

}  // namespace tv::exec
