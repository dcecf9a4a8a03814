// Attention and layer norm on CUDA as one kernel launch each, for the small shapes of a host-bound
// step (runtime/small_kernels.cu). There LibTorch's own calls cost the step more host time than their
// kernels take: the memory-efficient attention's backward makes transposes, allocations, a
// reduction and a copy around its kernels, and its layer norm's backward launches two kernels after
// a dispatch each. Here an output is allocated from the caching allocator and one kernel runs, in
// float arithmetic, on the current stream (so a CUDA graph captures it).
// Contract: each function returns its results, or undefined tensors when it does not apply: not a
// CUDA build with the kernels, not CUDA tensors of one device, a tensor autograd would record (grad
// mode on and it requires grad), TV_SMALL_KERNELS=0 in the environment (to compare with LibTorch's
// kernels), or outside the conditions below. The caller then runs ATen.
//  - small_attention(q, k, v, causal): softmax(q k^T / sqrt(E), causal: j <= i) v for q [B, H, L, E],
//    k [B, H, S, E], v [B, H, S, Ev] of one dtype (f32, bf16, f16), each with a dense last
//    dimension, L and S at most kSmallAttentionLength, E and Ev at most kSmallAttentionHeadDim, and
//    L == S when causal. Returns out [B, H, L, Ev] (laid out as [B, L, H, Ev], as the
//    memory-efficient kernel lays it out) and the log-sum-exp of each query row, float [B, H, L].
//  - small_attention_backward(grad, q, k, v, out, log_sumexp, causal): the gradients of q, k and
//    v, from the forward's output and log-sum-exp (float [B, H, L], any strides: this kernel's, the
//    memory-efficient kernel's view of its padded rows, or logsumexp's; undefined: the forward
//    kernel runs first, for it and for the output, which q, k and v may no longer give), under the
//    same conditions.
//  - small_product(a, b, bias, residual, m, n, k, out_shape): a product for runtime/small_gemm.h,
//    whose host cost is a launch where cuBLASLt's is several microseconds more: a [m, k] and b
//    [k, n] are matrices of the storages of tensors `a` and `b` read by the strides given, bias
//    [n] and residual [m, n] dense or undefined, all of one dtype (f32, bf16, f16) and device;
//    at most kSmallProductWork multiply-adds (m * n * k) and kSmallProductDepth of depth (a warp
//    sums each output's k products). Returns a dense tensor of out_shape (m * n
//    elements), the sum in float rounded once.
//  - small_layer_norm(x, normalized_shape, weight, bias, eps): native_layer_norm's (y, mean, rstd)
//    for a dense float x of at most kSmallLayerNormElements elements, weight and bias dense float of
//    normalized_shape or undefined; mean and rstd are float, shaped as ATen shapes them.
//  - small_layer_norm_backward(grad, x, normalized_shape, mean, rstd, weight, residual): (grad_x,
//    grad_weight, grad_bias) for the same x, a dense float grad of x's shape and dense float
//    statistics; a residual (dense float of x's shape, or undefined) is added to grad_x in float,
//    as `grad_x + residual` computes it.
#pragma once
#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <vector>

namespace tv::exec {

constexpr int64_t kSmallAttentionLength = 64;
constexpr int64_t kSmallAttentionHeadDim = 128;
constexpr int64_t kSmallLayerNormElements = int64_t{1} << 18;
constexpr int64_t kSmallProductWork = int64_t{1} << 21;
constexpr int64_t kSmallProductDepth = 2048;

// Whether this build has the kernels (a CUDA build compiled with nvcc) and they are switched on.
bool small_kernels_available();

struct SmallAttention {
  at::Tensor out, log_sumexp;
};
SmallAttention small_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal);
std::array<at::Tensor, 3> small_attention_backward(const at::Tensor& grad, const at::Tensor& q, const at::Tensor& k,
                                                   const at::Tensor& v, const at::Tensor& out,
                                                   const at::Tensor& log_sumexp, bool causal);

// A matrix of a tensor's storage, read by these strides (from the tensor's data pointer).
struct MatrixOf {
  const at::Tensor& data;
  int64_t row_stride, column_stride;
};
at::Tensor small_product(MatrixOf a, MatrixOf b, const at::Tensor& bias, const at::Tensor& residual, int64_t m,
                         int64_t n, int64_t k, at::IntArrayRef out_shape);

std::array<at::Tensor, 3> small_layer_norm(const at::Tensor& x, const std::vector<int64_t>& normalized_shape,
                                           const at::Tensor& weight, const at::Tensor& bias, double eps);
std::array<at::Tensor, 3> small_layer_norm_backward(const at::Tensor& grad, const at::Tensor& x,
                                                    const std::vector<int64_t>& normalized_shape,
                                                    const at::Tensor& mean, const at::Tensor& rstd,
                                                    const at::Tensor& weight, const at::Tensor& residual = {});

}  // namespace tv::exec
