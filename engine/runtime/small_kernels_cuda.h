// The launchers of runtime/small_kernels.cu, in plain types: the .cu file sees no ATen header, so
// that nvcc compiles it quickly and with any LibTorch. runtime/small_kernels.cpp checks and
// allocates; these only launch. Strides are in elements; every tensor's last dimension is dense.
// Each returns cudaSuccess or the launch's error.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace tv::exec::small_kernels {

enum class Dtype { f32, bf16, f16 };

// A [B, H, rows, columns] operand: its data and its strides over B, H and rows.
struct Operand4 {
  const void* data = nullptr;
  int64_t batch = 0, head = 0, row = 0;
};

// A [B, H, rows] float operand (the log-sum-exp).
struct Operand3 {
  const float* data = nullptr;
  int64_t batch = 0, head = 0, row = 0;
};

// Attention of q [B, H, L, E], k [B, H, S, E], v [B, H, S, Ev]; the scale is 1 / sqrt(E).
struct AttentionShape {
  int batch = 0, heads = 0, queries = 0, keys = 0, head_dim = 0, value_dim = 0;
  bool causal = false;
  Dtype dtype = Dtype::f32;
};

// The shared memory a block of each kernel takes for the shape (the caller declines above 48 KiB).
size_t attention_forward_shared_bytes(const AttentionShape&);
size_t attention_backward_shared_bytes(const AttentionShape&);

// out [B, L, H, Ev] dense (the caller views it as [B, H, L, Ev]), log_sumexp [B, H, L] dense, float.
cudaError_t attention_forward(const AttentionShape&, Operand4 q, Operand4 k, Operand4 v, void* out,
                              float* log_sumexp, cudaStream_t);
// grad_q [B, L, H, E], grad_k [B, S, H, E], grad_v [B, S, H, Ev], each dense.
cudaError_t attention_backward(const AttentionShape&, Operand4 grad, Operand4 q, Operand4 k, Operand4 v,
                               Operand4 out, Operand3 log_sumexp, void* grad_q, void* grad_k, void* grad_v,
                               cudaStream_t);

// A matrix operand: its data and its strides over rows and columns.
struct Matrix {
  const void* data = nullptr;
  int64_t row = 0, column = 0;
};

// out [m, n] (dense) = a [m, k] times b [k, n], plus bias [n] and residual [m, n] (dense) where not
// null, summed in float and rounded once.
cudaError_t product(Dtype, int64_t m, int64_t n, int64_t k, Matrix a, Matrix b, const void* bias, const void* residual,
                    void* out, cudaStream_t);

// Layer norm over the last `width` elements of `rows` dense rows, in float. weight and bias may be
// null. mean and rstd get one float a row.
cudaError_t layer_norm_forward(int64_t rows, int64_t width, const float* x, const float* weight, const float* bias,
                               float eps, float* y, float* mean, float* rstd, cudaStream_t);
// The three gradients of layer norm, from the forward's statistics; weight may be null (ones);
// residual (dense, x's shape) null or added to grad_x.
cudaError_t layer_norm_backward(int64_t rows, int64_t width, const float* grad, const float* x, const float* mean,
                                const float* rstd, const float* weight, const float* residual, float* grad_x,
                                float* grad_weight, float* grad_bias, cudaStream_t);

}  // namespace tv::exec::small_kernels
