// Helpers for writing execution rules (the op families' in engine/ops, the executor's own in
// engine/exec; .cpp files only).
// Contract: numbers become "wrapped number" tensors, so at:: ops promote them exactly as PyTorch
// promotes Python scalars (an int tensor times 2.5 gives float32, a float32 tensor plus 2 stays
// float32).
#pragma once
#include <ATen/ATen.h>

#include "runtime/aten_util.h"
#include "runtime/fast_views.h"
#include "runtime/rules.h"

namespace tv::exec::rules {

using Args = const std::vector<RValue>&;
using Kw = const RKwargs&;
using TT = const at::Tensor&;

inline const at::Tensor& tensor_at(Args a, size_t i, const char* name) { return rarg(a, i, name).tensor(); }
// An optional tensor: None gives an undefined tensor.
inline at::Tensor optional_tensor_at(Args a, size_t i) {
  return i < a.size() && a[i].is_tensor() ? a[i].t : at::Tensor();
}
inline std::vector<int64_t> ints_at(Args a, size_t i, const char* name) { return rarg(a, i, name).ints(); }
inline int64_t int_at(Args a, size_t i, const char* name) { return rarg(a, i, name).integer_value(); }
// Sizes given as one sequence (`reshape(a, (2, 16))`) or as the remaining arguments, as Thunder's
// `*shape` prints them (`ltorch.view(q, 2, 16, 4, 16)`).
inline std::vector<int64_t> sizes_from(Args a, size_t i, const char* name) {
  if (a.size() <= i + 1 || rarg(a, i, name).is_sequence()) return ints_at(a, i, name);
  std::vector<int64_t> sizes;
  for (size_t k = i; k < a.size(); ++k) sizes.push_back(a[k].integer_value());
  return sizes;
}
inline double number_at(Args a, size_t i, const char* name) { return rarg(a, i, name).number(); }
// An argument given by keyword, else at position i; null when neither (Thunder's printouts pass
// some arguments by keyword, e.g. keepdim, attn_mask, is_causal).
inline const RValue* argument(Args a, size_t i, Kw k, const char* keyword) {
  if (const RValue* v = rkwarg(k, keyword)) return v;
  return i < a.size() ? &a[i] : nullptr;
}
// A boolean argument (by keyword or at position i): `fallback` when absent or None.
inline bool flag_at(Args a, size_t i, Kw k, const char* keyword, bool fallback = false) {
  const RValue* v = argument(a, i, k, keyword);
  return v && !v->is_none() ? v->number() != 0 : fallback;
}
// A loss's reduction (by keyword or at position i) as at::Reduction: 'mean' when absent or None;
// ExecError naming `op` for anything but 'none', 'mean' or 'sum'.
int64_t reduction_at(Args a, size_t i, Kw k, const char* op);

at::Scalar scalar_of(const RValue& v);
// A tensor for a tensor or a number (wrapped number, CPU).
at::Tensor operand(const RValue& v);
// A result tensor, or a number when every operand was a number.
RValue result(const at::Tensor& t, bool all_numbers);
// Applies a binary at:: op to tensors or numbers.
RValue binary(Args a, const std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>& op);
RValue unary(Args a, const std::function<at::Tensor(const at::Tensor&)>& op);
// a ** b. A number exponent takes ATen's Scalar overload, as eager's `x ** 2` does: it
// special-cases 2, 3, 0.5, -0.5, -1 and -2 where the tensor overload computes powf everywhere.
RValue power(Args a);
at::TensorOptions options_of(DType dtype, const Device& device);
// Dims of a reduction: None or () mean every dim.
std::vector<int64_t> reduction_dims(const RValue& dims, int64_t rank);
// broadcast_in_dim as the prim defines it.
at::Tensor broadcast_in_dim(const at::Tensor& a, const std::vector<int64_t>& shape, const std::vector<int64_t>& dims);
// var and mean over `dims` with Bessel-style `correction`.
std::pair<at::Tensor, at::Tensor> var_mean(const at::Tensor& a, const std::vector<int64_t>& dims, int64_t correction,
                                           bool keepdim);
at::Tensor where(const at::Tensor& cond, const RValue& a, const RValue& b);
// `v` as a tensor of dtype `dt` on `device`. A number is made there (a fill kernel) rather than
// copied from the host: a host-to-device copy cannot be captured in a CUDA graph.
at::Tensor placed(const RValue& v, const at::Tensor& as_operand, at::Device device, at::ScalarType dt);
// t.reshape(shape), a view made without the dispatcher where one exists (runtime/fast_views.h: a
// host-bound step runs about a thousand reshapes).
inline at::Tensor reshaped(const at::Tensor& t, at::IntArrayRef shape) { return fast_reshape(t, shape); }
// a @ b, as at::matmul computes it. Two matrices run as small_gemm (runtime/small_gemm.h) on CUDA
// when it applies, float32 matrices or stacks of them as cpu_gemm (runtime/cpu_gemm.h) on the CPU
// when it applies, else mm; operands with the same batch dims as one bmm: fewer dispatches than
// matmul's expand and reshape chain.
at::Tensor matmul(const at::Tensor& a, const at::Tensor& b);
// at::linear(x, w, bias). On the CPU, cpu_linear where it applies. On CUDA, a small output runs as small_gemm with the bias in its
// epilogue: one launch, where LibTorch's linear takes four (memset, scale, split-K gemm,
// epilogue). Where small_gemm declines, a small output with a bias runs as one addmm over the
// broadcast bias (the bias copy and the gemm).
at::Tensor linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias);
// Whether a batched matmul has to copy `t` (rank 3 or more) first: its batch dims cannot be
// flattened into one stride, or its matrices are neither row- nor column-major.
bool batched_matmul_copies(const at::Tensor& t);

}  // namespace tv::exec::rules
