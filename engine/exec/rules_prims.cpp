// Rules for every prim of ops/prims.h, plus the helpers of rule_util.h. Thunder's
// `torch_<prim>_prim_impl` spellings are aliases of these.
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>

#include "exec/rule_util.h"
#include "exec/small_gemm.h"

namespace tv::exec::rules {

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
  return reshaped(a, view).expand(shape);
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

// `v` as a tensor of dtype `dt` on `device`. A number is made there (a fill kernel) rather than
// copied from the host: a host-to-device copy cannot be captured in a CUDA graph.
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
  if (a.dim() == 2 && b.dim() == 2) {
    if (at::Tensor out = small_gemm(a, b); out.defined()) return out;
    return at::mm(a, b);
  }
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
  if (!x.is_cuda() || x.dim() < 2 || w.dim() != 2 || (x.dim() > 2 && !x.is_contiguous()) ||
      (bias.defined() && bias.dim() != 1))
    return at::linear(x, w, bias);
  int64_t rows = x.numel() / std::max<int64_t>(x.size(-1), 1), cols = w.size(0);
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end() - 1);
  shape.push_back(cols);
  at::Tensor x2 = x.dim() == 2 ? x : reshaped(x, {rows, x.size(-1)});
  if (at::Tensor out = small_gemm(x2, w.t(), bias); out.defined()) return out.view(shape);
  // Large outputs keep LibTorch's fused epilogue: there the bias copy costs memory traffic, not launches.
  if (!bias.defined() || rows * cols > kSmallGemmOutputs) return at::linear(x, w, bias);
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

void alias(const std::string& alias, const std::string& name) {
  auto rule = detail::find_builtin(name);
  if (!rule) throw std::logic_error("alias of an unknown exec rule: " + name);
  detail::add_builtin(alias, *rule);
}

namespace {

void def(const std::string& name, std::function<RValue(Args, Kw)> fn) {
  detail::add_builtin(name, [fn = std::move(fn)](const ExecContext&, Args a, Kw k) { return fn(a, k); });
}

at::Tensor prim_div(const at::Tensor& x, const at::Tensor& y) {
  at::ScalarType dt = at::result_type(x, y);
  if (at::isIntegralType(dt, /*includeBool=*/true)) return at::div(x, y, "trunc");
  return at::div(x, y);
}

RValue convert(const RValue& v, DType dtype) {
  if (v.is_tensor()) return RValue::of(v.t.to(to_scalar_type(dtype)));
  double x = v.number();
  if (is_floating(dtype)) return RValue::floating(x);
  if (dtype == DType::b8) return RValue::boolean(x != 0);
  return RValue::integer(static_cast<int64_t>(x));
}

}  // namespace

}  // namespace tv::exec::rules

namespace tv::exec::detail {

void register_prim_rules() {
  using namespace rules;
  using TT = const at::Tensor&;
  def("prims.neg", [](Args a, Kw) { return unary(a, [](TT x) { return at::neg(x); }); });
  def("prims.exp", [](Args a, Kw) { return unary(a, [](TT x) { return at::exp(x); }); });
  def("prims.log", [](Args a, Kw) { return unary(a, [](TT x) { return at::log(x); }); });
  def("prims.tanh", [](Args a, Kw) { return unary(a, [](TT x) { return at::tanh(x); }); });
  def("prims.erf", [](Args a, Kw) { return unary(a, [](TT x) { return at::erf(x); }); });
  def("prims.rsqrt", [](Args a, Kw) { return unary(a, [](TT x) { return at::rsqrt(x); }); });
  def("prims.sqrt", [](Args a, Kw) { return unary(a, [](TT x) { return at::sqrt(x); }); });

  def("prims.add", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::add(x, y); }); });
  def("prims.sub", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::sub(x, y); }); });
  def("prims.mul", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::mul(x, y); }); });
  def("prims.div", [](Args a, Kw) { return binary(a, prim_div); });
  def("prims.pow", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::pow(x, y); }); });
  def("prims.maximum", [](Args a, Kw) {
    const RValue &x = rarg(a, 0, "a"), &y = rarg(a, 1, "b");
    if (!x.is_tensor() && !y.is_tensor()) return binary(a, [](TT x, TT y) { return at::maximum(x, y); });
    at::Tensor tx = operand(x), ty = operand(y);
    at::ScalarType dt = at::result_type(tx, ty);
    at::Device d = x.is_tensor() ? tx.device() : ty.device();
    return RValue::of(at::maximum(placed(x, tx, d, dt), placed(y, ty, d, dt)));
  });
  def("prims.eq", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::eq(x, y); }); });
  def("prims.ne", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::ne(x, y); }); });
  def("prims.lt", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::lt(x, y); }); });
  def("prims.le", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::le(x, y); }); });
  def("prims.gt", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::gt(x, y); }); });
  def("prims.ge", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::ge(x, y); }); });

  def("prims.where", [](Args a, Kw) {
    return RValue::of(where(tensor_at(a, 0, "pred"), rarg(a, 1, "a"), rarg(a, 2, "b")));
  });
  def("prims.convert_element_type", [](Args a, Kw) {
    const RValue& d = rarg(a, 1, "dtype");
    if (d.kind != RValue::Kind::dtype) throw ExecError("expected a dtype, got " + describe(d));
    return convert(rarg(a, 0, "a"), d.dtype);
  });

  def("prims.reshape", [](Args a, Kw) { return RValue::of(reshaped(tensor_at(a, 0, "a"), ints_at(a, 1, "shape"))); });
  def("prims.transpose", [](Args a, Kw) {
    return RValue::of(tensor_at(a, 0, "a").permute(ints_at(a, 1, "permutation")));
  });
  def("prims.broadcast_in_dim", [](Args a, Kw) {
    return RValue::of(broadcast_in_dim(tensor_at(a, 0, "a"), ints_at(a, 1, "shape"), ints_at(a, 2, "broadcast_dimensions")));
  });
  def("prims.slice", [](Args a, Kw) {
    at::Tensor t = tensor_at(a, 0, "a");
    auto start = ints_at(a, 1, "start_indices"), end = ints_at(a, 2, "end_indices");
    std::vector<int64_t> strides;
    if (a.size() > 3 && !a[3].is_none()) strides = a[3].ints();
    for (size_t k = 0; k < start.size(); ++k)
      t = t.slice(static_cast<int64_t>(k), start[k], end[k], strides.empty() ? 1 : strides[k]);
    return RValue::of(t);
  });
  def("prims.cat", [](Args a, Kw) {
    std::vector<at::Tensor> ts;
    for (const auto& v : rarg(a, 0, "tensors").items) ts.push_back(v.tensor());
    return RValue::of(at::cat(ts, int_at(a, 1, "dim")));
  });
  def("prims.shallow_copy", [](Args a, Kw) { return RValue(rarg(a, 0, "a")); });

  def("prims.sum", [](Args a, Kw) {
    const at::Tensor& t = tensor_at(a, 0, "a");
    auto dims = ints_at(a, 1, "dims");
    return RValue::of(dims.empty() ? t : at::sum(t, dims));
  });
  def("prims.amax", [](Args a, Kw) {
    const at::Tensor& t = tensor_at(a, 0, "a");
    auto dims = ints_at(a, 1, "dims");
    return RValue::of(dims.empty() ? t : at::amax(t, dims));
  });
  def("prims.var_mean", [](Args a, Kw k) {
    const at::Tensor& t = tensor_at(a, 0, "a");
    const RValue* c = rkwarg(k, "correction");
    int64_t correction = c ? c->integer_value() : (a.size() > 2 ? a[2].integer_value() : 1);
    auto [var, mean] = var_mean(t, reduction_dims(rarg(a, 1, "dims"), t.dim()), correction, false);
    return RValue::tuple({RValue::of(var), RValue::of(mean)});
  });

  def("prims.linear", [](Args a, Kw) {
    return RValue::of(rules::linear(tensor_at(a, 0, "a"), tensor_at(a, 1, "w"), optional_tensor_at(a, 2)));
  });
  def("prims.matmul", [](Args a, Kw) {
    return RValue::of(rules::matmul(tensor_at(a, 0, "a"), tensor_at(a, 1, "b")));
  });

  def("prims.take", [](Args a, Kw) {
    const at::Tensor& t = tensor_at(a, 0, "a");
    const at::Tensor& idx = tensor_at(a, 1, "indices");
    int64_t dim = int_at(a, 2, "dim");
    if (dim < 0) dim += t.dim();
    std::vector<int64_t> shape(t.sizes().begin(), t.sizes().begin() + dim);
    shape.insert(shape.end(), idx.sizes().begin(), idx.sizes().end());
    shape.insert(shape.end(), t.sizes().begin() + dim + 1, t.sizes().end());
    return RValue::of(t.index_select(dim, idx.reshape({-1})).reshape(shape));
  });
  def("prims.take_along_axis", [](Args a, Kw) {
    return RValue::of(at::take_along_dim(tensor_at(a, 0, "a"), tensor_at(a, 1, "indices"), int_at(a, 2, "dim")));
  });

  def("prims.full", [](Args a, Kw) {
    return RValue::of(at::full(ints_at(a, 0, "shape"), scalar_of(rarg(a, 1, "fill_value")),
                               options_of(rarg(a, 3, "dtype").dtype, rarg(a, 2, "device").device)));
  });
  def("prims.iota", [](Args a, Kw) {
    int64_t length = int_at(a, 0, "length");
    DType dtype = rarg(a, 4, "dtype").dtype;
    Device device = rarg(a, 3, "device").device;
    at::Tensor t;
    if (is_floating(dtype)) {
      t = at::arange(length, options_of(DType::f64, device)) * number_at(a, 2, "step") + number_at(a, 1, "start");
    } else {
      t = at::arange(length, options_of(DType::i64, device)) * int_at(a, 2, "step") + int_at(a, 1, "start");
    }
    return RValue::of(t.to(to_scalar_type(dtype)));
  });
  // Deterministic in (seed, offset); not bit-identical to Thunder's philox stream.
  def("prims.uniform_philox", [](Args a, Kw) {
    auto shape = ints_at(a, 0, "shape");
    double lo = number_at(a, 1, "minval"), hi = number_at(a, 2, "maxval");
    Device device = rarg(a, 3, "device").device;
    DType dtype = rarg(a, 4, "dtype").dtype;
    // The seed is an int, or a tensor of shape [] the caller drew from its generator.
    const RValue& given = rarg(a, 5, "seed");
    int64_t drawn = given.kind == RValue::Kind::tensor ? given.tensor().item<int64_t>() : given.integer_value();
    uint64_t seed = static_cast<uint64_t>(drawn) * 0x9E3779B97F4A7C15ull +
                    static_cast<uint64_t>(int_at(a, 6, "offset"));
    at::Generator gen = at::detail::createCPUGenerator(seed);
    at::Tensor r = at::rand(shape, gen, at::TensorOptions().dtype(at::kFloat));
    r = r * (hi - lo) + lo;
    return RValue::of(r.to(to_device(device), to_scalar_type(dtype)));
  });

  // Thunder's torch executor names of the prims.
  for (const char* p : {"neg", "exp", "log", "tanh", "erf", "rsqrt", "sqrt", "add", "sub", "mul", "div", "pow", "maximum",
                        "eq", "ne", "lt", "le", "gt", "ge", "where", "convert_element_type", "reshape", "transpose",
                        "broadcast_in_dim", "slice", "cat", "shallow_copy", "sum", "amax", "var_mean", "linear",
                        "matmul", "take", "take_along_axis", "full", "iota", "uniform_philox"})
    alias(std::string("torch_") + p + "_prim_impl", std::string("prims.") + p);
  alias("shallow_copy", "prims.shallow_copy");
  def("clear_mutable_collection", [](Args, Kw) { return RValue::none(); });
}

}  // namespace tv::exec::detail
