#include "runtime/small_kernels.h"

#ifdef TV_HAVE_SMALL_KERNELS
#include <ATen/core/grad_mode.h>
#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdlib>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "runtime/small_kernels_cuda.h"
#endif

namespace tv::exec {

#ifdef TV_HAVE_SMALL_KERNELS

namespace {

namespace sk = small_kernels;

constexpr size_t kSharedBytes = 48 * 1024;  // a block's shared memory without opting in to more

// TV_SMALL_KERNELS=0 in the environment: LibTorch's kernels everywhere (read once).
bool switched_on() {
  static const bool on = [] {
    const char* v = std::getenv("TV_SMALL_KERNELS");
    return !(v && std::string(v) == "0");
  }();
  return on;
}

// Defined CUDA tensors of one device and dtype with storage of their own, none of which autograd
// would record.
bool operands_apply(std::initializer_list<const at::Tensor*> tensors) {
  if (!switched_on()) return false;
  const at::Tensor& first = **tensors.begin();
  for (const at::Tensor* t : tensors) {
    if (!t->defined() || !t->is_cuda() || t->device() != first.device() || t->scalar_type() != first.scalar_type())
      return false;
    if (t->is_conj() || t->is_neg() || !t->has_storage()) return false;
    if (at::GradMode::is_enabled() && t->requires_grad()) return false;
  }
  return true;
}

bool dtype_of(at::ScalarType t, sk::Dtype* out) {
  switch (t) {
    case at::kFloat: *out = sk::Dtype::f32; return true;
    case at::kBFloat16: *out = sk::Dtype::bf16; return true;
    case at::kHalf: *out = sk::Dtype::f16; return true;
    default: return false;
  }
}

sk::Operand4 operand4(const at::Tensor& t) { return {t.data_ptr(), t.stride(0), t.stride(1), t.stride(2)}; }

void check_launch(cudaError_t status, const char* kernel) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(kernel) + ": " + cudaGetErrorString(status));
}

cudaStream_t stream_of(const at::Tensor& t) { return c10::cuda::getCurrentCUDAStream(t.get_device()).stream(); }

// The attention shape of q, k and v, if the kernels take it.
bool attention_shape(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal,
                     sk::AttentionShape* s) {
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4 || !dtype_of(q.scalar_type(), &s->dtype)) return false;
  for (int64_t d : {0, 1})
    if (k.size(d) != q.size(d) || v.size(d) != q.size(d)) return false;
  const int64_t L = q.size(2), S = k.size(2), E = q.size(3), Ev = v.size(3);
  if (v.size(2) != S || k.size(3) != E || (causal && L != S)) return false;
  if (L < 1 || S < 1 || E < 1 || Ev < 1 || L > kSmallAttentionLength || S > kSmallAttentionLength ||
      E > kSmallAttentionHeadDim || Ev > kSmallAttentionHeadDim || q.size(0) * q.size(1) > (int64_t{1} << 30))
    return false;
  if (q.stride(3) != 1 || k.stride(3) != 1 || v.stride(3) != 1) return false;
  *s = {static_cast<int>(q.size(0)), static_cast<int>(q.size(1)), static_cast<int>(L), static_cast<int>(S),
        static_cast<int>(E), static_cast<int>(Ev), causal, s->dtype};
  return true;
}

// A new [B, H, rows, columns] tensor laid out as [B, rows, H, columns].
at::Tensor heads_inside(const at::Tensor& like, int64_t rows, int64_t columns) {
  const int64_t B = like.size(0), H = like.size(1);
  return at::detail::empty_strided_cuda({B, H, rows, columns}, {rows * H * columns, columns, H * columns, 1},
                                        like.options());
}

// The number of rows layer norm makes of x, or 0 when the kernels do not take x.
int64_t layer_norm_rows(const at::Tensor& x, const std::vector<int64_t>& normalized_shape, int64_t* width) {
  const int64_t axis = x.dim() - static_cast<int64_t>(normalized_shape.size());
  if (x.scalar_type() != at::kFloat || !x.is_contiguous() || axis < 0 || x.numel() == 0 ||
      x.numel() > kSmallLayerNormElements)
    return 0;
  *width = 1;
  for (size_t i = 0; i < normalized_shape.size(); ++i) {
    if (x.size(axis + static_cast<int64_t>(i)) != normalized_shape[i]) return 0;
    *width *= normalized_shape[i];
  }
  return *width == 0 ? 0 : x.numel() / *width;
}

// A dense float tensor of `numel` elements on x's device, or undefined.
bool dense_float(const at::Tensor& t, const at::Tensor& x, int64_t numel) {
  return !t.defined() || (operands_apply({&x, &t}) && t.is_contiguous() && t.numel() == numel);
}

const float* float_data(const at::Tensor& t) { return t.defined() ? t.data_ptr<float>() : nullptr; }

}  // namespace

bool small_kernels_available() { return switched_on(); }

SmallAttention small_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal) {
  sk::AttentionShape s;
  if (!operands_apply({&q, &k, &v}) || !attention_shape(q, k, v, causal, &s) ||
      sk::attention_forward_shared_bytes(s) > kSharedBytes)
    return {};
  c10::cuda::CUDAGuard guard(q.device());
  at::Tensor out = heads_inside(q, s.queries, s.value_dim);
  at::Tensor lse = at::detail::empty_cuda({q.size(0), q.size(1), q.size(2)}, q.options().dtype(at::kFloat));
  check_launch(sk::attention_forward(s, operand4(q), operand4(k), operand4(v), out.data_ptr(), lse.data_ptr<float>(),
                                     stream_of(q)),
               "small attention forward");
  return {out, lse};
}

std::array<at::Tensor, 3> small_attention_backward(const at::Tensor& grad, const at::Tensor& q, const at::Tensor& k,
                                                   const at::Tensor& v, const at::Tensor& out,
                                                   const at::Tensor& log_sumexp, bool causal) {
  sk::AttentionShape s;
  if (!operands_apply({&q, &k, &v, &grad, &out}) || !attention_shape(q, k, v, causal, &s) ||
      sk::attention_backward_shared_bytes(s) > kSharedBytes)
    return {};
  const std::vector<int64_t> out_shape{q.size(0), q.size(1), q.size(2), v.size(3)};
  if (grad.sizes() != at::IntArrayRef(out_shape) || out.sizes() != at::IntArrayRef(out_shape) || grad.stride(3) != 1 ||
      out.stride(3) != 1)
    return {};
  at::Tensor lse = log_sumexp;
  if (lse.defined() && (!lse.is_cuda() || lse.device() != q.device() || lse.scalar_type() != at::kFloat ||
                        lse.dim() != 3 || lse.size(0) != q.size(0) || lse.size(1) != q.size(1) ||
                        lse.size(2) != q.size(2) || !lse.has_storage() ||
                        (at::GradMode::is_enabled() && lse.requires_grad())))
    return {};
  c10::cuda::CUDAGuard guard(q.device());
  at::Tensor o = out;
  if (!lse.defined()) {  // the forward kernel again, for both (as the memory-efficient path does)
    auto forward = small_attention(q, k, v, causal);
    o = forward.out, lse = forward.log_sumexp;
  }
  at::Tensor gq = heads_inside(q, s.queries, s.head_dim), gk = heads_inside(q, s.keys, s.head_dim),
             gv = heads_inside(q, s.keys, s.value_dim);
  sk::Operand3 lse_operand{lse.data_ptr<float>(), lse.stride(0), lse.stride(1), lse.stride(2)};
  check_launch(sk::attention_backward(s, operand4(grad), operand4(q), operand4(k), operand4(v), operand4(o),
                                      lse_operand, gq.data_ptr(), gk.data_ptr(), gv.data_ptr(), stream_of(q)),
               "small attention backward");
  return {gq, gk, gv};
}

at::Tensor small_product(MatrixOf a, MatrixOf b, const at::Tensor& bias, const at::Tensor& residual, int64_t m,
                         int64_t n, int64_t k, at::IntArrayRef out_shape) {
  sk::Dtype dtype;
  if (!operands_apply({&a.data, &b.data}) || !dtype_of(a.data.scalar_type(), &dtype)) return {};
  if (m < 1 || n < 1 || k < 1 || k > kSmallProductDepth || m > kSmallProductWork / n / k) return {};  // (m * n * k without overflow)
  if (bias.defined() && (!operands_apply({&a.data, &bias}) || bias.dim() != 1 || !bias.is_contiguous() || bias.numel() != n))
    return {};
  if (residual.defined() && (!operands_apply({&a.data, &residual}) || !residual.is_contiguous() || residual.numel() != m * n))
    return {};
  c10::cuda::CUDAGuard guard(a.data.device());
  at::Tensor out = at::detail::empty_cuda(out_shape, a.data.options());
  check_launch(sk::product(dtype, m, n, k, {a.data.data_ptr(), a.row_stride, a.column_stride},
                           {b.data.data_ptr(), b.row_stride, b.column_stride},
                           bias.defined() ? bias.data_ptr() : nullptr, residual.defined() ? residual.data_ptr() : nullptr,
                           out.data_ptr(), stream_of(a.data)),
               "small product");
  return out;
}

std::array<at::Tensor, 3> small_layer_norm(const at::Tensor& x, const std::vector<int64_t>& normalized_shape,
                                           const at::Tensor& weight, const at::Tensor& bias, double eps) {
  int64_t width = 0;
  if (!operands_apply({&x})) return {};
  const int64_t rows = layer_norm_rows(x, normalized_shape, &width);
  if (rows == 0 || !dense_float(weight, x, width) || !dense_float(bias, x, width)) return {};
  c10::cuda::CUDAGuard guard(x.device());
  std::vector<int64_t> stat_shape(x.sizes().begin(), x.sizes().end() - static_cast<int64_t>(normalized_shape.size()));
  stat_shape.resize(x.dim(), 1);
  at::Tensor y = at::detail::empty_cuda(x.sizes(), x.options());
  at::Tensor mean = at::detail::empty_cuda(stat_shape, x.options()), rstd = at::detail::empty_cuda(stat_shape, x.options());
  check_launch(sk::layer_norm_forward(rows, width, x.data_ptr<float>(), float_data(weight), float_data(bias),
                                      static_cast<float>(eps), y.data_ptr<float>(), mean.data_ptr<float>(),
                                      rstd.data_ptr<float>(), stream_of(x)),
               "small layer norm");
  return {y, mean, rstd};
}

std::array<at::Tensor, 3> small_layer_norm_backward(const at::Tensor& grad, const at::Tensor& x,
                                                    const std::vector<int64_t>& normalized_shape,
                                                    const at::Tensor& mean, const at::Tensor& rstd,
                                                    const at::Tensor& weight, const at::Tensor& residual) {
  int64_t width = 0;
  if (!operands_apply({&x, &grad, &mean, &rstd})) return {};
  const int64_t rows = layer_norm_rows(x, normalized_shape, &width);
  if (rows == 0 || grad.sizes() != x.sizes() || !grad.is_contiguous() || !dense_float(mean, x, rows) ||
      !dense_float(rstd, x, rows) || !dense_float(weight, x, width))
    return {};
  if (residual.defined() && (residual.sizes() != x.sizes() || !dense_float(residual, x, x.numel()))) return {};
  c10::cuda::CUDAGuard guard(x.device());
  at::Tensor gx = at::detail::empty_cuda(x.sizes(), x.options());
  at::Tensor gw = at::detail::empty_cuda(normalized_shape, x.options()), gb = at::detail::empty_cuda(normalized_shape, x.options());
  check_launch(sk::layer_norm_backward(rows, width, grad.data_ptr<float>(), x.data_ptr<float>(), mean.data_ptr<float>(),
                                       rstd.data_ptr<float>(), float_data(weight), float_data(residual), gx.data_ptr<float>(),
                                       gw.data_ptr<float>(), gb.data_ptr<float>(), stream_of(x)),
               "small layer norm backward");
  return {gx, gw, gb};
}

#else

bool small_kernels_available() { return false; }

SmallAttention small_attention(const at::Tensor&, const at::Tensor&, const at::Tensor&, bool) { return {}; }

std::array<at::Tensor, 3> small_attention_backward(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                                   const at::Tensor&, const at::Tensor&, const at::Tensor&, bool) {
  return {};
}

at::Tensor small_product(MatrixOf, MatrixOf, const at::Tensor&, const at::Tensor&, int64_t, int64_t, int64_t,
                         at::IntArrayRef) {
  return {};
}

std::array<at::Tensor, 3> small_layer_norm(const at::Tensor&, const std::vector<int64_t>&, const at::Tensor&,
                                           const at::Tensor&, double) {
  return {};
}

std::array<at::Tensor, 3> small_layer_norm_backward(const at::Tensor&, const at::Tensor&, const std::vector<int64_t>&,
                                                    const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                                    const at::Tensor&) {
  return {};
}

#endif

}  // namespace tv::exec
