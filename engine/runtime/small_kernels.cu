// Kernels for the small shapes of a host-bound step: one launch each, one thread block per
// (batch, head) for attention and one warp per row for layer norm, all arithmetic in float.
// See runtime/small_kernels.h for when the executor runs them.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

#include "runtime/small_kernels_cuda.h"

namespace tv::exec::small_kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kWarpSize = 32;
constexpr int kWarps = kThreads / kWarpSize;

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16(x); }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half(x); }

__device__ __forceinline__ float warp_sum(float x) {
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

__device__ __forceinline__ float warp_max(float x) {
  for (int offset = 16; offset > 0; offset /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

// rows x columns of an operand of (batch, head) into shared memory, as float, row-major.
template <class T>
__device__ void load(float* to, const Operand4& from, int b, int h, int rows, int columns) {
  const T* base = static_cast<const T*>(from.data) + b * from.batch + h * from.head;
  for (int i = threadIdx.x; i < rows * columns; i += blockDim.x)
    to[i] = to_float(base[(i / columns) * from.row + i % columns]);
}

// The dot product of rows a and b of `n` floats.
__device__ __forceinline__ float dot(const float* a, const float* b, int n) {
  float acc = 0;
  for (int e = 0; e < n; ++e) acc += a[e] * b[e];
  return acc;
}

template <class T>
__global__ void __launch_bounds__(kThreads) attention_forward_kernel(AttentionShape s, Operand4 q, Operand4 k,
                                                                     Operand4 v, T* out, float* log_sumexp) {
  extern __shared__ float shared[];
  const int L = s.queries, S = s.keys, E = s.head_dim, Ev = s.value_dim;
  const int b = blockIdx.x / s.heads, h = blockIdx.x % s.heads;
  float *Q = shared, *K = Q + L * E, *V = K + S * E, *P = V + S * Ev;
  load<T>(Q, q, b, h, L, E);
  load<T>(K, k, b, h, S, E);
  load<T>(V, v, b, h, S, Ev);
  __syncthreads();
  const float scale = rsqrtf(static_cast<float>(E));
  for (int i = threadIdx.x; i < L * S; i += blockDim.x) {
    const int l = i / S, j = i % S;
    P[i] = s.causal && j > l ? -INFINITY : dot(Q + l * E, K + j * E, E) * scale;
  }
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int l = warp; l < L; l += kWarps) {
    float* row = P + l * S;
    float top = -INFINITY;
    for (int j = lane; j < S; j += 32) top = fmaxf(top, row[j]);
    top = warp_max(top);
    float sum = 0;
    for (int j = lane; j < S; j += 32) {
      row[j] = expf(row[j] - top);
      sum += row[j];
    }
    sum = warp_sum(sum);
    for (int j = lane; j < S; j += 32) row[j] /= sum;
    if (lane == 0) log_sumexp[(static_cast<int64_t>(b) * s.heads + h) * L + l] = top + logf(sum);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < L * Ev; i += blockDim.x) {
    const int l = i / Ev, e = i % Ev;
    float acc = 0;
    for (int j = 0; j < S; ++j) acc += P[l * S + j] * V[j * Ev + e];
    out[((static_cast<int64_t>(b) * L + l) * s.heads + h) * Ev + e] = from_float<T>(acc);
  }
}

// With P = softmax(q k^T * scale) recomputed from the log-sum-exp, D = rowsum(grad * out):
// grad_v = P^T grad, then dS = P * (grad v^T - D) in P's place, grad_q = dS k * scale,
// grad_k = dS^T q * scale.
template <class T>
__global__ void __launch_bounds__(kThreads) attention_backward_kernel(AttentionShape s, Operand4 grad, Operand4 q,
                                                                      Operand4 k, Operand4 v, Operand4 out,
                                                                      Operand3 log_sumexp, T* grad_q, T* grad_k,
                                                                      T* grad_v) {
  extern __shared__ float shared[];
  const int L = s.queries, S = s.keys, E = s.head_dim, Ev = s.value_dim;
  const int b = blockIdx.x / s.heads, h = blockIdx.x % s.heads;
  float *Q = shared, *K = Q + L * E, *V = K + S * E, *G = V + S * Ev, *P = G + L * Ev, *D = P + L * S;
  load<T>(Q, q, b, h, L, E);
  load<T>(K, k, b, h, S, E);
  load<T>(V, v, b, h, S, Ev);
  load<T>(G, grad, b, h, L, Ev);
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const T* o = static_cast<const T*>(out.data) + b * out.batch + h * out.head;
  for (int l = warp; l < L; l += kWarps) {
    float acc = 0;
    for (int e = lane; e < Ev; e += 32) acc += G[l * Ev + e] * to_float(o[l * out.row + e]);
    acc = warp_sum(acc);
    if (lane == 0) D[l] = acc;
  }
  const float scale = rsqrtf(static_cast<float>(E));
  const float* lse = log_sumexp.data + b * log_sumexp.batch + h * log_sumexp.head;
  for (int i = threadIdx.x; i < L * S; i += blockDim.x) {
    const int l = i / S, j = i % S;
    P[i] = s.causal && j > l ? 0.f : expf(dot(Q + l * E, K + j * E, E) * scale - lse[l * log_sumexp.row]);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < S * Ev; i += blockDim.x) {
    const int j = i / Ev, e = i % Ev;
    float acc = 0;
    for (int l = 0; l < L; ++l) acc += P[l * S + j] * G[l * Ev + e];
    grad_v[((static_cast<int64_t>(b) * S + j) * s.heads + h) * Ev + e] = from_float<T>(acc);
  }
  __syncthreads();
  float* dS = P;
  for (int i = threadIdx.x; i < L * S; i += blockDim.x) {
    const int l = i / S, j = i % S;
    dS[i] = P[i] * (dot(G + l * Ev, V + j * Ev, Ev) - D[l]);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < L * E; i += blockDim.x) {
    const int l = i / E, e = i % E;
    float acc = 0;
    for (int j = 0; j < S; ++j) acc += dS[l * S + j] * K[j * E + e];
    grad_q[((static_cast<int64_t>(b) * L + l) * s.heads + h) * E + e] = from_float<T>(acc * scale);
  }
  for (int i = threadIdx.x; i < S * E; i += blockDim.x) {
    const int j = i / E, e = i % E;
    float acc = 0;
    for (int l = 0; l < L; ++l) acc += dS[l * S + j] * Q[l * E + e];
    grad_k[((static_cast<int64_t>(b) * S + j) * s.heads + h) * E + e] = from_float<T>(acc * scale);
  }
}

// A warp an output: its lanes split the depth (reading a's row and b's column 32 wide) and sum.
template <class T>
__global__ void __launch_bounds__(kThreads) product_kernel(int64_t m, int64_t n, int64_t k, Matrix a, Matrix b,
                                                           const T* bias, const T* residual, T* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / kWarpSize;
  if (i >= m * n) return;
  const int lane = threadIdx.x % kWarpSize;
  const int64_t r = i / n, c = i % n;
  const T* row = static_cast<const T*>(a.data) + r * a.row;
  const T* column = static_cast<const T*>(b.data) + c * b.column;
  float acc = 0;
  for (int64_t p = lane; p < k; p += kWarpSize) acc += to_float(row[p * a.column]) * to_float(column[p * b.row]);
  acc = warp_sum(acc);
  if (lane != 0) return;
  if (bias) acc += to_float(bias[c]);
  if (residual) acc += to_float(residual[i]);
  out[i] = from_float<T>(acc);
}

__global__ void __launch_bounds__(kThreads) layer_norm_forward_kernel(int64_t rows, int64_t width, const float* x,
                                                                      const float* weight, const float* bias,
                                                                      float eps, float* y, float* mean, float* rstd) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const float* xr = x + r * width;
  float sum = 0;
  for (int64_t d = lane; d < width; d += 32) sum += xr[d];
  const float mu = warp_sum(sum) / static_cast<float>(width);
  float squares = 0;
  for (int64_t d = lane; d < width; d += 32) squares += (xr[d] - mu) * (xr[d] - mu);
  const float inverse = rsqrtf(warp_sum(squares) / static_cast<float>(width) + eps);
  float* yr = y + r * width;
  for (int64_t d = lane; d < width; d += 32) {
    float t = (xr[d] - mu) * inverse;
    if (weight) t *= weight[d];
    if (bias) t += bias[d];
    yr[d] = t;
  }
  if (lane == 0) {
    mean[r] = mu;
    rstd[r] = inverse;
  }
}

// Blocks below row_blocks give grad_x, a warp a row; the others give grad_weight and grad_bias, a
// thread a column summing over the rows.
__global__ void __launch_bounds__(kThreads) layer_norm_backward_kernel(int64_t rows, int64_t width, const float* grad,
                                                                       const float* x, const float* mean,
                                                                       const float* rstd, const float* weight,
                                                                       const float* residual, float* grad_x,
                                                                       float* grad_weight,
                                                                       float* grad_bias, int row_blocks) {
  if (static_cast<int>(blockIdx.x) < row_blocks) {
    const int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (r >= rows) return;
    const float *gr = grad + r * width, *xr = x + r * width, mu = mean[r], inverse = rstd[r];
    float sum = 0, sum_xhat = 0;  // of grad * weight, and of that times x's normalised value
    for (int64_t d = lane; d < width; d += 32) {
      const float gw = gr[d] * (weight ? weight[d] : 1.f);
      sum += gw;
      sum_xhat += gw * (xr[d] - mu) * inverse;
    }
    const float n = static_cast<float>(width), a = warp_sum(sum) / n, c = warp_sum(sum_xhat) / n;
    float* out = grad_x + r * width;
    const float* res = residual ? residual + r * width : nullptr;
    for (int64_t d = lane; d < width; d += 32) {
      const float gw = gr[d] * (weight ? weight[d] : 1.f);
      const float value = inverse * (gw - a - (xr[d] - mu) * inverse * c);
      out[d] = res ? __fadd_rn(value, res[d]) : value;  // (no contraction into the product: the add's rounding)
    }
    return;
  }
  const int64_t d = static_cast<int64_t>(blockIdx.x - row_blocks) * kThreads + threadIdx.x;
  if (d >= width) return;
  float gw = 0, gb = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float g = grad[r * width + d];
    gw += g * (x[r * width + d] - mean[r]) * rstd[r];
    gb += g;
  }
  grad_weight[d] = gw;
  grad_bias[d] = gb;
}

int blocks_of(int64_t count, int64_t per_block) { return static_cast<int>((count + per_block - 1) / per_block); }

}  // namespace

size_t attention_forward_shared_bytes(const AttentionShape& s) {
  const size_t L = s.queries, S = s.keys, E = s.head_dim, Ev = s.value_dim;
  return sizeof(float) * ((L + S) * E + S * Ev + L * S);
}

size_t attention_backward_shared_bytes(const AttentionShape& s) {
  const size_t L = s.queries, S = s.keys, E = s.head_dim, Ev = s.value_dim;
  return sizeof(float) * ((L + S) * E + (S + L) * Ev + L * S + L);
}

cudaError_t attention_forward(const AttentionShape& s, Operand4 q, Operand4 k, Operand4 v, void* out,
                              float* log_sumexp, cudaStream_t stream) {
  const dim3 grid(s.batch * s.heads);
  const size_t bytes = attention_forward_shared_bytes(s);
  switch (s.dtype) {
    case Dtype::f32:
      attention_forward_kernel<float><<<grid, kThreads, bytes, stream>>>(s, q, k, v, static_cast<float*>(out), log_sumexp);
      break;
    case Dtype::bf16:
      attention_forward_kernel<__nv_bfloat16>
          <<<grid, kThreads, bytes, stream>>>(s, q, k, v, static_cast<__nv_bfloat16*>(out), log_sumexp);
      break;
    case Dtype::f16:
      attention_forward_kernel<__half><<<grid, kThreads, bytes, stream>>>(s, q, k, v, static_cast<__half*>(out), log_sumexp);
      break;
  }
  return cudaGetLastError();
}

cudaError_t attention_backward(const AttentionShape& s, Operand4 grad, Operand4 q, Operand4 k, Operand4 v,
                               Operand4 out, Operand3 log_sumexp, void* grad_q, void* grad_k, void* grad_v,
                               cudaStream_t stream) {
  const dim3 grid(s.batch * s.heads);
  const size_t bytes = attention_backward_shared_bytes(s);
  switch (s.dtype) {
    case Dtype::f32:
      attention_backward_kernel<float><<<grid, kThreads, bytes, stream>>>(
          s, grad, q, k, v, out, log_sumexp, static_cast<float*>(grad_q), static_cast<float*>(grad_k),
          static_cast<float*>(grad_v));
      break;
    case Dtype::bf16:
      attention_backward_kernel<__nv_bfloat16><<<grid, kThreads, bytes, stream>>>(
          s, grad, q, k, v, out, log_sumexp, static_cast<__nv_bfloat16*>(grad_q), static_cast<__nv_bfloat16*>(grad_k),
          static_cast<__nv_bfloat16*>(grad_v));
      break;
    case Dtype::f16:
      attention_backward_kernel<__half><<<grid, kThreads, bytes, stream>>>(
          s, grad, q, k, v, out, log_sumexp, static_cast<__half*>(grad_q), static_cast<__half*>(grad_k),
          static_cast<__half*>(grad_v));
      break;
  }
  return cudaGetLastError();
}

cudaError_t product(Dtype dtype, int64_t m, int64_t n, int64_t k, Matrix a, Matrix b, const void* bias,
                    const void* residual, void* out, cudaStream_t stream) {
  const int blocks = blocks_of(m * n, kWarps);
  switch (dtype) {
    case Dtype::f32:
      product_kernel<float><<<blocks, kThreads, 0, stream>>>(m, n, k, a, b, static_cast<const float*>(bias),
                                                           static_cast<const float*>(residual), static_cast<float*>(out));
      break;
    case Dtype::bf16:
      product_kernel<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(
          m, n, k, a, b, static_cast<const __nv_bfloat16*>(bias), static_cast<const __nv_bfloat16*>(residual),
          static_cast<__nv_bfloat16*>(out));
      break;
    case Dtype::f16:
      product_kernel<__half><<<blocks, kThreads, 0, stream>>>(m, n, k, a, b, static_cast<const __half*>(bias),
                                                            static_cast<const __half*>(residual), static_cast<__half*>(out));
      break;
  }
  return cudaGetLastError();
}

cudaError_t layer_norm_forward(int64_t rows, int64_t width, const float* x, const float* weight, const float* bias,
                               float eps, float* y, float* mean, float* rstd, cudaStream_t stream) {
  layer_norm_forward_kernel<<<blocks_of(rows, kWarps), kThreads, 0, stream>>>(rows, width, x, weight, bias, eps, y,
                                                                            mean, rstd);
  return cudaGetLastError();
}

cudaError_t layer_norm_backward(int64_t rows, int64_t width, const float* grad, const float* x, const float* mean,
                                const float* rstd, const float* weight, const float* residual, float* grad_x,
                                float* grad_weight, float* grad_bias, cudaStream_t stream) {
  const int row_blocks = blocks_of(rows, kWarps);
  layer_norm_backward_kernel<<<row_blocks + blocks_of(width, kThreads), kThreads, 0, stream>>>(
      rows, width, grad, x, mean, rstd, weight, residual, grad_x, grad_weight, grad_bias, row_blocks);
  return cudaGetLastError();
}

}  // namespace tv::exec::small_kernels
