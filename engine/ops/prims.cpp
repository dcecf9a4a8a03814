// The prims (see prims.h for the list and argument order): meta functions, then execution rules.
// Their gradient rules are those of the ltorch ops of their family (elementwise.cpp, shape.cpp, ...).
#include "ops/prims.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <numeric>

#include "ops/meta.h"
#include "ops/op_utils.h"
#include "runtime/rule_util.h"
#include "runtime/small_gemm.h"

namespace tv::prims {

using namespace tv::ops;
using meta::Shape;

namespace {

using Args = const std::vector<Value>&;
using Kw = const Kwargs&;

T out(TraceBuilder& b, Shape shape, DType dtype, Device device, const std::vector<Value>& inputs) {
  return b.tensor(std::move(shape), dtype, device, output_requires_grad(inputs, dtype));
}

// ---- elementwise ----

void unary(const std::string& name, bool floating_result) {
  define("prims." + name, true, {"elementwise"}, [floating_result](TraceBuilder& b, Args args, Kw) {
    T a = tensor_arg(args, 0, "a");
    DType dtype = floating_result && !is_floating(a->dtype) ? DType::f32 : a->dtype;
    if (!floating_result && a->dtype == DType::b8) throw OpError("expected a numeric tensor, got a bool tensor");
    return Value::of(out(b, a->shape, dtype, a->device, args));
  });
}

void binary(const std::string& name, bool comparison) {
  define("prims." + name, true, {"elementwise"}, [comparison](TraceBuilder& b, Args args, Kw) {
    std::vector<Value> ops = {arg(args, 0, "a"), arg(args, 1, "b")};
    for (const auto& v : ops)
      if (!v.is_number() && !(v.is_proxy() && v.proxy->is_tensor()))
        throw OpError("operands must be tensors or numbers, got " + python_text(v));
    DType dtype = meta::result_dtype(ops);
    Shape shape = meta::common_shape(ops);
    return Value::of(out(b, shape, comparison ? DType::b8 : dtype, meta::common_device(ops), ops));
  });
}

Value where_meta(TraceBuilder& b, Args args, Kw) {
  T pred = tensor_arg(args, 0, "pred");
  if (pred->dtype != DType::b8)
    throw OpError("pred must be a bool tensor, got " + std::string(short_name(pred->dtype)));
  std::vector<Value> branches = {arg(args, 1, "a"), arg(args, 2, "b")};
  bool any_tensor = false;
  int kind = 0;  // of the numbers when both branches are numbers: 0 bool, 1 int, 2 float
  for (const auto& v : branches) {
    if (v.is_proxy() && v.proxy->is_tensor())
      any_tensor = true;
    else if (v.is_number())
      kind = std::max(kind, v.kind == Value::Kind::boolean ? 0 : v.kind == Value::Kind::integer ? 1 : 2);
    else
      throw OpError("branches must be tensors or numbers, got " + python_text(v));
  }
  DType dtype = any_tensor ? meta::result_dtype(branches) : kind == 2 ? DType::f32 : kind == 1 ? DType::i64 : DType::b8;
  std::vector<Value> all = {Value::of(pred), branches[0], branches[1]};
  return Value::of(out(b, meta::common_shape(all), dtype, meta::common_device(all), branches));
}

Value convert_meta(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  DType dtype = dtype_arg(args, 1, "dtype");
  return Value::of(out(b, a->shape, dtype, a->device, args));
}

Value bitwise_not_meta(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  if (is_floating(a->dtype)) throw OpError("bitwise_not needs a bool or integer tensor, got " + std::string(short_name(a->dtype)));
  return Value::of(b.tensor(a->shape, a->dtype, a->device));
}

// ---- shape ----

Value reshape_meta(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  Shape shape = ints_arg(args, 1, "shape");
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw OpError("prims.reshape needs a concrete shape, got " + shape_text(shape));
    n *= d;
  }
  if (n != a->numel())
    throw OpError("cannot reshape a tensor of shape " + shape_text(a->shape) + " (" + std::to_string(a->numel()) +
                  " elements) to " + shape_text(shape) + " (" + std::to_string(n) + " elements)");
  return Value::of(out(b, shape, a->dtype, a->device, args));
}

Value transpose_meta(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  auto rank = static_cast<int64_t>(a->shape.size());
  std::vector<int64_t> perm = ints_arg(args, 1, "permutation");
  if (static_cast<int64_t>(perm.size()) != rank)
    throw OpError("permutation " + shape_text(perm) + " does not match a tensor of shape " + shape_text(a->shape));
  perm = meta::normalize_dims(perm, rank);
  Shape shape;
  for (int64_t d : perm) shape.push_back(a->shape[d]);
  return Value::of(out(b, shape, a->dtype, a->device, args));
}

Value broadcast_in_dim_meta(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  Shape shape = ints_arg(args, 1, "shape");
  std::vector<int64_t> dims = ints_arg(args, 2, "broadcast_dimensions");
  auto fail = [&](const std::string& why) {
    return OpError("cannot broadcast shape " + shape_text(a->shape) + " to " + shape_text(shape) +
                   " with broadcast_dimensions " + shape_text(dims) + ": " + why);
  };
  if (dims.size() != a->shape.size()) throw fail("one broadcast dimension per input dim is needed");
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= static_cast<int64_t>(shape.size())) throw fail("dimension out of range");
    if (i > 0 && dims[i] <= dims[i - 1]) throw fail("dimensions must be increasing");
    if (a->shape[i] != 1 && a->shape[i] != shape[dims[i]]) throw fail("sizes differ at input dim " + std::to_string(i));
  }
  return Value::of(out(b, shape, a->dtype, a->device, args));
}

Value slice_meta(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  std::vector<int64_t> start = ints_arg(args, 1, "start_indices"), end = ints_arg(args, 2, "end_indices");
  std::vector<int64_t> strides = args.size() > 3 ? ints_arg(args, 3, "strides") : std::vector<int64_t>{};
  if (strides.empty()) strides.assign(a->shape.size(), 1);
  if (start.size() != a->shape.size() || end.size() != a->shape.size() || strides.size() != a->shape.size())
    throw OpError("slice of a tensor of shape " + shape_text(a->shape) + " needs one start, end and stride per dim");
  Shape shape;
  for (size_t i = 0; i < start.size(); ++i) {
    if (start[i] < 0 || start[i] > end[i] || end[i] > a->shape[i] || strides[i] < 1)
      throw OpError("slice [" + std::to_string(start[i]) + ":" + std::to_string(end[i]) + ":" +
                    std::to_string(strides[i]) + "] is out of range for dim " + std::to_string(i) + " of shape " +
                    shape_text(a->shape));
    shape.push_back((end[i] - start[i] + strides[i] - 1) / strides[i]);
  }
  return Value::of(out(b, shape, a->dtype, a->device, args));
}

Value cat_meta(TraceBuilder& b, Args args, Kw) {
  const Value& list = arg(args, 0, "tensors");
  if (!list.is_sequence() || list.items.empty()) throw OpError("cat needs a non-empty list of tensors");
  std::vector<Value> tensors;
  for (size_t i = 0; i < list.items.size(); ++i) tensors.push_back(Value::of(tensor_arg(list.items, i, "tensors")));
  const Shape& first = tensors[0].proxy->shape;
  int64_t dim = meta::normalize_dim(int_arg(args, 1, "dim"), static_cast<int64_t>(first.size()));
  Shape shape = first;
  shape[dim] = 0;
  for (const auto& t : tensors) {
    const Shape& s = t.proxy->shape;
    bool ok = s.size() == first.size();
    for (size_t i = 0; ok && i < s.size(); ++i) ok = static_cast<int64_t>(i) == dim || s[i] == first[i];
    if (!ok)
      throw OpError("cat along dim " + std::to_string(dim) + ": shapes " + shape_text(first) + " and " + shape_text(s) +
                    " differ outside that dim");
    shape[dim] += s[dim];
  }
  return Value::of(out(b, shape, meta::result_dtype(tensors), meta::common_device(tensors), tensors));
}

Value flip_meta(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  meta::normalize_dims(ints_arg(args, 1, "dims"), static_cast<int64_t>(a->shape.size()));
  return Value::of(b.tensor(a->shape, a->dtype, a->device, a->requires_grad));
}

// copy_(src, dst): writes src into dst (a trace input: a buffer or an input) and gives dst's value.
Value copy_meta(TraceBuilder& b, Args args, Kw) {
  T src = tensor_arg(args, 0, "copy_from"), dst = tensor_arg(args, 1, "copy_to");
  if (meta::broadcast_shapes(src->shape, dst->shape) != dst->shape)
    throw OpError("copy_: a value of shape " + shape_text(src->shape) + " cannot be written into " + shape_text(dst->shape));
  return Value::of(b.tensor(dst->shape, dst->dtype, dst->device));
}

Value shallow_copy_meta(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  return Value::of(b.tensor(a->shape, a->dtype, a->device, a->requires_grad));
}

// ---- reductions ----

void reduction(const std::string& name) {
  define("prims." + name, true, {"reduction"}, [](TraceBuilder& b, Args args, Kw) {
    T a = tensor_arg(args, 0, "a");
    auto dims = meta::normalize_dims(ints_arg(args, 1, "dims"), static_cast<int64_t>(a->shape.size()));
    return Value::of(out(b, meta::reduction_shape(a->shape, dims, false), a->dtype, a->device, args));
  });
}

Value var_mean_meta(TraceBuilder& b, Args args, Kw kwargs) {
  T a = tensor_arg(args, 0, "a");
  require_floating(a, "var_mean");
  auto dims = meta::normalize_dims(ints_arg(args, 1, "dims"), static_cast<int64_t>(a->shape.size()));
  const Value* c = kwarg(kwargs, "correction");
  if (c && !c->is_number()) throw OpError("correction must be a number, got " + python_text(*c));
  Shape shape = meta::reduction_shape(a->shape, dims, false);
  T var = out(b, shape, a->dtype, a->device, args);
  T mean = out(b, shape, a->dtype, a->device, args);
  return Value::tuple({Value::of(var), Value::of(mean)});
}

// ---- matmul ----

// Matrix products do not promote dtypes (torch and Thunder refuse mixed operands): say which to cast.
void check_same_dtype(const char* op, const char* first_name, const T& first, const char* name, const T& other) {
  if (!other || other->dtype == first->dtype) return;
  throw OpError(std::string(op) + ": the " + first_name + " is " + std::string(short_name(first->dtype)) + " but the " +
                name + " is " + std::string(short_name(other->dtype)) +
                " (matrix products do not promote dtypes); cast one of them, e.g. x.to(" +
                std::string(torch_name(other->dtype)) + ")");
}

Value linear_meta(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a"), w = tensor_arg(args, 1, "w");
  T bias = optional_tensor_arg(args, 2, "bias");
  check_same_dtype("linear", "input", a, "weight", w);
  check_same_dtype("linear", "weight", w, "bias", bias);
  if (a->shape.empty() || w->shape.size() != 2 || a->shape.back() != w->shape[1])
    throw OpError("linear: input of shape " + shape_text(a->shape) + " and weight of shape " + shape_text(w->shape) +
                  " do not match (expected weight [out, " +
                  (a->shape.empty() ? std::string("?") : std::to_string(a->shape.back())) + "])");
  if (bias && (bias->shape.size() != 1 || bias->shape[0] != w->shape[0]))
    throw OpError("linear: bias of shape " + shape_text(bias->shape) + " does not match weight of shape " +
                  shape_text(w->shape));
  std::vector<Value> ops = {Value::of(a), Value::of(w)};
  if (bias) ops.push_back(Value::of(bias));
  Shape shape = a->shape;
  shape.back() = w->shape[0];
  return Value::of(out(b, shape, meta::result_dtype(ops), meta::common_device(ops), ops));
}

Value matmul_meta(TraceBuilder& b, Args args, Kw) {
  std::vector<Value> ops = {Value::of(tensor_arg(args, 0, "a")), Value::of(tensor_arg(args, 1, "b"))};
  check_same_dtype("matmul", "first operand", ops[0].proxy, "second operand", ops[1].proxy);
  Shape shape = meta::matmul_shape(ops[0].proxy->shape, ops[1].proxy->shape);
  return Value::of(out(b, shape, meta::result_dtype(ops), meta::common_device(ops), ops));
}

// ---- gather ----

void check_indices(const T& indices) {
  if (!is_integral(indices->dtype) || indices->dtype == DType::b8)
    throw OpError("indices must be an integer tensor, got " + std::string(short_name(indices->dtype)));
}

Value take_meta(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a"), indices = tensor_arg(args, 1, "indices");
  check_indices(indices);
  int64_t dim = meta::normalize_dim(int_arg(args, 2, "dim"), static_cast<int64_t>(a->shape.size()));
  Shape shape(a->shape.begin(), a->shape.begin() + dim);
  shape.insert(shape.end(), indices->shape.begin(), indices->shape.end());
  shape.insert(shape.end(), a->shape.begin() + dim + 1, a->shape.end());
  return Value::of(out(b, shape, a->dtype, a->device, {Value::of(a)}));
}

Value take_along_axis_meta(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a"), indices = tensor_arg(args, 1, "indices");
  check_indices(indices);
  int64_t dim = meta::normalize_dim(int_arg(args, 2, "dim"), static_cast<int64_t>(a->shape.size()));
  bool ok = indices->shape.size() == a->shape.size();
  for (size_t i = 0; ok && i < a->shape.size(); ++i)
    ok = static_cast<int64_t>(i) == dim || indices->shape[i] == a->shape[i] || indices->shape[i] == 1;
  if (!ok)
    throw OpError("take_along_axis: indices of shape " + shape_text(indices->shape) + " do not fit a tensor of shape " +
                  shape_text(a->shape) + " along dim " + std::to_string(dim));
  return Value::of(out(b, indices->shape, a->dtype, a->device, {Value::of(a)}));
}

// ---- creation ----

Shape checked_shape(Args args, size_t i) {
  Shape shape = ints_arg(args, i, "shape");
  for (int64_t d : shape)
    if (d < 0) throw OpError("shape " + shape_text(shape) + " has a negative size");
  return shape;
}

Value full_meta(TraceBuilder& b, Args args, Kw) {
  Shape shape = checked_shape(args, 0);
  number_arg(args, 1, "fill_value");
  return Value::of(b.tensor(shape, dtype_arg(args, 3, "dtype"), device_arg(args, 2, "device")));
}

Value iota_meta(TraceBuilder& b, Args args, Kw) {
  int64_t length = int_arg(args, 0, "length");
  if (length < 0) throw OpError("iota length must be >= 0, got " + std::to_string(length));
  number_arg(args, 1, "start");
  number_arg(args, 2, "step");
  return Value::of(b.tensor({length}, dtype_arg(args, 4, "dtype"), device_arg(args, 3, "device")));
}

Value uniform_philox_meta(TraceBuilder& b, Args args, Kw) {
  Shape shape = checked_shape(args, 0);
  number_arg(args, 1, "minval");
  number_arg(args, 2, "maxval");
  DType dtype = dtype_arg(args, 4, "dtype");
  if (!is_floating(dtype))
    throw OpError("uniform_philox needs a floating dtype, got " + std::string(short_name(dtype)));
  check_seed(arg(args, 5, "seed"), "uniform_philox");
  int_arg(args, 6, "offset");
  return Value::of(b.tensor(shape, dtype, device_arg(args, 3, "device")));
}

}  // namespace


}  // namespace tv::prims

// ---- Execution rules: one at:: call each ----

namespace tv::exec {

namespace {

using namespace rules;
using ops::exec_rule;
using ops::residual_rule;

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

void register_prim_execution() {
  exec_rule("prims.neg", [](Args a, Kw) { return unary(a, [](TT x) { return at::neg(x); }); });
  exec_rule("prims.exp", [](Args a, Kw) { return unary(a, [](TT x) { return at::exp(x); }); });
  exec_rule("prims.log", [](Args a, Kw) { return unary(a, [](TT x) { return at::log(x); }); });
  exec_rule("prims.tanh", [](Args a, Kw) { return unary(a, [](TT x) { return at::tanh(x); }); });
  exec_rule("prims.erf", [](Args a, Kw) { return unary(a, [](TT x) { return at::erf(x); }); });
  exec_rule("prims.rsqrt", [](Args a, Kw) { return unary(a, [](TT x) { return at::rsqrt(x); }); });
  exec_rule("prims.sqrt", [](Args a, Kw) { return unary(a, [](TT x) { return at::sqrt(x); }); });

  exec_rule("prims.abs", [](Args a, Kw) { return unary(a, [](TT x) { return at::abs(x); }); });
  exec_rule("prims.sign", [](Args a, Kw) { return unary(a, [](TT x) { return at::sign(x); }); });
  exec_rule("prims.sin", [](Args a, Kw) { return unary(a, [](TT x) { return at::sin(x); }); });
  exec_rule("prims.cos", [](Args a, Kw) { return unary(a, [](TT x) { return at::cos(x); }); });
  exec_rule("prims.reciprocal", [](Args a, Kw) { return unary(a, [](TT x) { return at::reciprocal(x); }); });
  exec_rule("prims.bitwise_not", [](Args a, Kw) { return unary(a, [](TT x) { return at::bitwise_not(x); }); });

  exec_rule("prims.add", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::add(x, y); }); });
  exec_rule("prims.sub", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::sub(x, y); }); });
  exec_rule("prims.mul", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::mul(x, y); }); });
  exec_rule("prims.div", [](Args a, Kw) { return binary(a, prim_div); });
  exec_rule("prims.pow", [](Args a, Kw) { return power(a); });
  // at::maximum and at::minimum take tensors only: a number operand becomes one of the result's type.
  for (bool is_max : {true, false}) {
    exec_rule(is_max ? "prims.maximum" : "prims.minimum", [is_max](Args a, Kw) {
      auto op = [is_max](TT x, TT y) { return is_max ? at::maximum(x, y) : at::minimum(x, y); };
      const RValue &x = rarg(a, 0, "a"), &y = rarg(a, 1, "b");
      if (!x.is_tensor() && !y.is_tensor()) return binary(a, op);
      at::Tensor tx = operand(x), ty = operand(y);
      at::ScalarType dt = at::result_type(tx, ty);
      at::Device d = x.is_tensor() ? tx.device() : ty.device();
      return RValue::of(op(placed(x, tx, d, dt), placed(y, ty, d, dt)));
    });
  }
  exec_rule("prims.eq", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::eq(x, y); }); });
  exec_rule("prims.ne", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::ne(x, y); }); });
  exec_rule("prims.lt", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::lt(x, y); }); });
  exec_rule("prims.le", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::le(x, y); }); });
  exec_rule("prims.gt", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::gt(x, y); }); });
  exec_rule("prims.ge", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::ge(x, y); }); });

  exec_rule("prims.where", [](Args a, Kw) {
    return RValue::of(where(tensor_at(a, 0, "pred"), rarg(a, 1, "a"), rarg(a, 2, "b")));
  });
  exec_rule("prims.convert_element_type", [](Args a, Kw) {
    const RValue& d = rarg(a, 1, "dtype");
    if (d.kind != RValue::Kind::dtype) throw ExecError("expected a dtype, got " + describe(d));
    return convert(rarg(a, 0, "a"), d.dtype);
  });

  exec_rule("prims.reshape", [](Args a, Kw) { return RValue::of(reshaped(tensor_at(a, 0, "a"), ints_at(a, 1, "shape"))); });
  exec_rule("prims.transpose", [](Args a, Kw) {
    return RValue::of(fast_permute(tensor_at(a, 0, "a"), ints_at(a, 1, "permutation")));
  });
  exec_rule("prims.broadcast_in_dim", [](Args a, Kw) {
    return RValue::of(broadcast_in_dim(tensor_at(a, 0, "a"), ints_at(a, 1, "shape"), ints_at(a, 2, "broadcast_dimensions")));
  });
  exec_rule("prims.slice", [](Args a, Kw) {
    at::Tensor t = tensor_at(a, 0, "a");
    auto start = ints_at(a, 1, "start_indices"), end = ints_at(a, 2, "end_indices");
    std::vector<int64_t> strides;
    if (a.size() > 3 && !a[3].is_none()) strides = a[3].ints();
    for (size_t k = 0; k < start.size(); ++k)
      t = t.slice(static_cast<int64_t>(k), start[k], end[k], strides.empty() ? 1 : strides[k]);
    return RValue::of(t);
  });
  exec_rule("prims.cat", [](Args a, Kw) {
    std::vector<at::Tensor> ts;
    for (const auto& v : rarg(a, 0, "tensors").items) ts.push_back(v.tensor());
    return RValue::of(at::cat(ts, int_at(a, 1, "dim")));
  });
  exec_rule("prims.flip", [](Args a, Kw) { return RValue::of(at::flip(tensor_at(a, 0, "a"), ints_at(a, 1, "dims"))); });
  exec_rule("prims.copy_", [](Args a, Kw) {
    at::Tensor dst = tensor_at(a, 1, "copy_to");
    dst.copy_(tensor_at(a, 0, "copy_from"));
    return RValue::of(dst);
  });
  exec_rule("prims.shallow_copy", [](Args a, Kw) { return RValue(rarg(a, 0, "a")); });

  exec_rule("prims.sum", [](Args a, Kw) {
    const at::Tensor& t = tensor_at(a, 0, "a");
    auto dims = ints_at(a, 1, "dims");
    return RValue::of(dims.empty() ? t : at::sum(t, dims));
  });
  exec_rule("prims.amax", [](Args a, Kw) {
    const at::Tensor& t = tensor_at(a, 0, "a");
    auto dims = ints_at(a, 1, "dims");
    return RValue::of(dims.empty() ? t : at::amax(t, dims));
  });
  exec_rule("prims.amin", [](Args a, Kw) {
    const at::Tensor& t = tensor_at(a, 0, "a");
    auto dims = ints_at(a, 1, "dims");
    return RValue::of(dims.empty() ? t : at::amin(t, dims));
  });
  exec_rule("prims.var_mean", [](Args a, Kw k) {
    const at::Tensor& t = tensor_at(a, 0, "a");
    const RValue* c = rkwarg(k, "correction");
    int64_t correction = c ? c->integer_value() : (a.size() > 2 ? a[2].integer_value() : 1);
    auto [var, mean] = var_mean(t, reduction_dims(rarg(a, 1, "dims"), t.dim()), correction, false);
    return RValue::tuple({RValue::of(var), RValue::of(mean)});
  });

  exec_rule("prims.linear", [](Args a, Kw) {
    return RValue::of(rules::linear(tensor_at(a, 0, "a"), tensor_at(a, 1, "w"), optional_tensor_at(a, 2)));
  });
  // The residual in the product's epilogue (small_linear's beta = 1), rounded once with the product.
  residual_rule("prims.linear", [](Args a, Kw k, const at::Tensor& residual) {
    if (!k.empty()) return RValue::none();
    at::Tensor out = small_linear(tensor_at(a, 0, "a"), tensor_at(a, 1, "w"), optional_tensor_at(a, 2), residual);
    return out.defined() ? RValue::of(std::move(out)) : RValue::none();
  });
  exec_rule("prims.matmul", [](Args a, Kw) {
    return RValue::of(rules::matmul(tensor_at(a, 0, "a"), tensor_at(a, 1, "b")));
  });

  exec_rule("prims.take", [](Args a, Kw) {
    const at::Tensor& t = tensor_at(a, 0, "a");
    const at::Tensor& idx = tensor_at(a, 1, "indices");
    int64_t dim = int_at(a, 2, "dim");
    if (dim < 0) dim += t.dim();
    std::vector<int64_t> shape(t.sizes().begin(), t.sizes().begin() + dim);
    shape.insert(shape.end(), idx.sizes().begin(), idx.sizes().end());
    shape.insert(shape.end(), t.sizes().begin() + dim + 1, t.sizes().end());
    return RValue::of(t.index_select(dim, idx.reshape({-1})).reshape(shape));
  });
  exec_rule("prims.take_along_axis", [](Args a, Kw) {
    return RValue::of(at::take_along_dim(tensor_at(a, 0, "a"), tensor_at(a, 1, "indices"), int_at(a, 2, "dim")));
  });

  exec_rule("prims.full", [](Args a, Kw) {
    return RValue::of(at::full(ints_at(a, 0, "shape"), scalar_of(rarg(a, 1, "fill_value")),
                               options_of(rarg(a, 3, "dtype").dtype, rarg(a, 2, "device").device)));
  });
  exec_rule("prims.iota", [](Args a, Kw) {
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
  exec_rule("prims.uniform_philox", [](Args a, Kw) {
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
}

}  // namespace

}  // namespace tv::exec

namespace tv::prims {

void register_prims() {
  for (const char* n : {"neg", "abs", "sign"}) unary(n, false);
  for (const char* n : {"exp", "log", "tanh", "erf", "rsqrt", "sqrt", "sin", "cos", "reciprocal"}) unary(n, true);
  define("prims.bitwise_not", true, {"elementwise"}, bitwise_not_meta);
  for (const char* n : {"add", "sub", "mul", "div", "pow", "maximum", "minimum"}) binary(n, false);
  for (const char* n : {"eq", "ne", "lt", "le", "gt", "ge"}) binary(n, true);
  define("prims.where", true, {"elementwise"}, where_meta);
  define("prims.convert_element_type", true, {"elementwise"}, convert_meta);

  define("prims.reshape", true, {"shape"}, reshape_meta);
  define("prims.transpose", true, {"shape"}, transpose_meta);
  define("prims.broadcast_in_dim", true, {"shape"}, broadcast_in_dim_meta);
  define("prims.slice", true, {"shape"}, slice_meta);
  define("prims.cat", true, {"shape"}, cat_meta);
  define("prims.shallow_copy", true, {}, shallow_copy_meta);
  define("prims.flip", true, {"shape"}, flip_meta);
  define("prims.copy_", true, {"effect"}, copy_meta);

  reduction("sum");
  reduction("amax");
  reduction("amin");
  define("prims.var_mean", true, {"reduction"}, var_mean_meta);

  define("prims.linear", true, {"matmul"}, linear_meta);
  define("prims.matmul", true, {"matmul"}, matmul_meta);

  define("prims.take", true, {}, take_meta);
  define("prims.take_along_axis", true, {}, take_along_axis_meta);

  define("prims.full", true, {"creation"}, full_meta);
  define("prims.iota", true, {"creation"}, iota_meta);
  define("prims.uniform_philox", true, {"creation", "random"}, uniform_philox_meta);
  exec::register_prim_execution();
}

}  // namespace tv::prims
