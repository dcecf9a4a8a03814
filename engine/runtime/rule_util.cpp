#include "runtime/rule_util.h"

#include <algorithm>

#include "runtime/cpu_gemm.h"
#include "runtime/small_gemm.h"

namespace tv::exec::rules {

int64_t reduction_at(Args a, size_t i, Kw k, const char* op) {
  const RValue* r = argument(a, i, k, "reduction");
  if (!r || r->is_none()) return at::Reduction::Mean;
  if (r->kind == RValue::Kind::string && r->s == "none") return at::Reduction::None;
  if (r->kind == RValue::Kind::string && r->s == "sum") return at::Reduction::Sum;
  if (r->kind == RValue::Kind::string && r->s == "mean") return at::Reduction::Mean;
  throw ExecError(std::string(op) + ": reduction must be 'none', 'mean' or 'sum', got " + describe(*r), op);
}

at::Scalar scalar_of(const RValue& v) {
  switch (v.kind) {
    case RValue::Kind::boolean: return at::Scalar(v.b);
    case RValue::Kind::integer: return at::Scalar(v.i);
    case RValue::Kind::floating: return at::Scalar(v.f);
    default: throw ExecError("expected a number, got " + describe(v));
  }
}

at::Tensor operand(const RValue& v) {
  if (v.is_tensor()) return v.t;
  at::Tensor t;
  switch (v.kind) {
    case RValue::Kind::boolean: t = at::scalar_tensor(at::Scalar(v.b), at::kBool); break;
    case RValue::Kind::integer: t = at::scalar_tensor(at::Scalar(v.i), at::kLong); break;
    case RValue::Kind::floating: t = at::scalar_tensor(at::Scalar(v.f), at::kDouble); break;
    default: throw ExecError("expected a tensor or a number, got " + describe(v));
  }
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

RValue result(const at::Tensor& t, bool all_numbers) {
  if (!all_numbers) return RValue::of(t);
  if (t.scalar_type() == at::kBool) return RValue::boolean(t.item<bool>());
  if (at::isFloatingType(t.scalar_type())) return RValue::floating(t.item<double>());
  return RValue::integer(t.item<int64_t>());
}

RValue binary(Args a, const std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>& op) {
  const RValue& x = rarg(a, 0, "a");
  const RValue& y = rarg(a, 1, "b");
  return result(op(operand(x), operand(y)), !x.is_tensor() && !y.is_tensor());
}

RValue power(Args a) {
  const RValue& x = rarg(a, 0, "a");
  const RValue& y = rarg(a, 1, "b");
  if (x.is_tensor() && y.is_number()) return RValue::of(at::pow(x.t, scalar_of(y)));
  return binary(a, [](const at::Tensor& b, const at::Tensor& e) { return at::pow(b, e); });
}

RValue unary(Args a, const std::function<at::Tensor(const at::Tensor&)>& op) {
  const RValue& x = rarg(a, 0, "a");
  return result(op(operand(x)), !x.is_tensor());
}

at::TensorOptions options_of(DType dtype, const Device& device) {
  return at::TensorOptions().dtype(to_scalar_type(dtype)).device(to_device(device));
}

std::vector<int64_t> reduction_dims(const RValue& dims, int64_t rank) {
  std::vector<int64_t> d = dims.is_none() ? std::vector<int64_t>{} : dims.ints();
  if (d.empty())
    for (int64_t k = 0; k < rank; ++k) d.push_back(k);
  return d;
}

at::Tensor broadcast_in_dim(const at::Tensor& a, const std::vector<int64_t>& shape, const std::vector<int64_t>& dims) {
  if (static_cast<int64_t>(dims.size()) != a.dim())
    throw ExecError("broadcast_in_dim: " + std::to_string(dims.size()) + " broadcast dimensions for a tensor of rank " +
                    std::to_string(a.dim()));
  std::vector<int64_t> view(shape.size(), 1);
  for (size_t k = 0; k < dims.size(); ++k) view.at(dims[k]) = a.size(static_cast<int64_t>(k));
  return fast_expand(reshaped(a, view), shape);
}

std::pair<at::Tensor, at::Tensor> var_mean(const at::Tensor& a, const std::vector<int64_t>& dims_in, int64_t correction,
                                           bool keepdim) {
  std::vector<int64_t> dims = dims_in;
  for (auto& k : dims)
    if (k < 0) k += a.dim();
  if ((correction == 0 || correction == 1) && !dims.empty()) {  // LibTorch's one-pass kernel
    auto [var, mean] = at::var_mean(a, at::IntArrayRef(dims), /*unbiased=*/correction == 1, keepdim);
    return {var, mean};
  }
  at::Tensor mean = a.mean(dims, /*keepdim=*/true);
  at::Tensor d = a - mean;
  int64_t n = 1;
  for (int64_t k : dims) n *= a.size(k);
  at::Tensor var = (d * d).sum(dims, keepdim) / static_cast<double>(std::max<int64_t>(n - correction, 0));
  if (!keepdim) {
    std::vector<int64_t> shape;
    for (int64_t k = 0; k < a.dim(); ++k)
      if (std::find(dims.begin(), dims.end(), k) == dims.end()) shape.push_back(a.size(k));
    mean = mean.reshape(shape);
  }
  return {var, mean};
}

at::Tensor placed(const RValue& v, const at::Tensor& as_operand, at::Device device, at::ScalarType dt) {
  if (v.is_tensor()) return as_operand.to(device, dt);
  return at::scalar_tensor(scalar_of(v), at::TensorOptions().dtype(dt).device(device));
}

at::Tensor where(const at::Tensor& cond, const RValue& a, const RValue& b) {
  at::Tensor x = operand(a), y = operand(b);
  at::ScalarType dt = at::result_type(x, y);
  return at::where(cond, placed(a, x, cond.device(), dt), placed(b, y, cond.device(), dt));
}

at::Tensor matmul(const at::Tensor& a, const at::Tensor& b) {
  const bool matrices = a.dim() == 2 && b.dim() == 2;
  if (matrices)
    if (at::Tensor out = small_gemm(a, b); out.defined()) return out;
  if (at::Tensor out = cpu_gemm(a, b); out.defined()) return out;  // (matrices and stacks of them)
  if (matrices) return at::mm(a, b);
  if (a.dim() < 3 || a.dim() != b.dim() || a.sizes().slice(0, a.dim() - 2) != b.sizes().slice(0, b.dim() - 2))
    return at::matmul(a, b);
  auto batch = a.sizes().slice(0, a.dim() - 2);
  int64_t count = 1;
  for (int64_t n : batch) count *= n;
  int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  at::Tensor out = at::bmm(reshaped(a, {count, m, k}), reshaped(b, {count, b.size(-2), n}));
  std::vector<int64_t> shape(batch.begin(), batch.end());
  shape.push_back(m);
  shape.push_back(n);
  return out.view(shape);
}

at::Tensor linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias) {
  if (!x.is_cuda()) {
    if (at::Tensor out = cpu_linear(x, w, bias); out.defined()) return out;
    return at::linear(x, w, bias);
  }
  if (x.dim() < 2 || w.dim() != 2 || (x.dim() > 2 && !x.is_contiguous()) ||
      (bias.defined() && bias.dim() != 1))
    return at::linear(x, w, bias);
  if (at::Tensor out = small_linear(x, w, bias); out.defined()) return out;
  int64_t rows = x.numel() / std::max<int64_t>(x.size(-1), 1), cols = w.size(0);
  // Large outputs keep LibTorch's fused epilogue: there the bias copy costs memory traffic, not launches.
  if (!bias.defined() || rows * cols > kSmallGemmOutputs) return at::linear(x, w, bias);
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end() - 1);
  shape.push_back(cols);
  at::Tensor x2 = x.dim() == 2 ? x : reshaped(x, {rows, x.size(-1)});
  return at::addmm(bias.expand({rows, cols}), x2, w.t()).view(shape);
}

bool batched_matmul_copies(const at::Tensor& t) {
  if (t.dim() < 3) return false;
  int64_t rows = t.size(-2), cols = t.size(-1);
  bool row_major = t.stride(-1) == 1 || cols == 1, column_major = t.stride(-2) == 1 || rows == 1;
  if (!row_major && !column_major) return true;
  // Batch dims flatten into one stride when each (of size > 1) steps over the next one whole.
  int64_t inner_size = 1, inner_stride = 0;
  for (int64_t d = t.dim() - 3; d >= 0; --d) {
    if (t.size(d) == 1) continue;
    if (inner_size > 1 && t.stride(d) != inner_stride * inner_size) return true;
    inner_size = t.size(d), inner_stride = t.stride(d);
  }
  return false;
}

}  // namespace tv::exec::rules
