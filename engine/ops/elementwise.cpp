// Elementwise ltorch ops: arithmetic, comparisons, unary math, activations, where, dtype casts,
// detach.
// Binary ops convert their Python numbers to the kind of the result (`2` -> `2.0` for a float
// tensor) before calling the prim; activations are compositions of other ltorch ops.
#include <cmath>
#include <numbers>

#include "ops/ltorch.h"
#include "ops/meta.h"
#include "ops/op_utils.h"

namespace tv::ltorch {

using namespace tv::ops;

namespace {

using Args = const std::vector<Value>&;
using Kw = const Kwargs&;

// ltorch.<name>(a, b) -> prims.<name>(a, b) with numbers converted to the result's kind.
SymbolImpl binary_impl(std::string prim) {
  return [prim](TraceBuilder& b, Args args, Kw kwargs) {
    Value x = arg(args, 0, "a"), y = arg(args, 1, "b");
    DType dtype = meta::result_dtype({x, y});
    if (const Value* alpha = kwarg(kwargs, "alpha"); alpha && !alpha->is_none() && alpha->as_double() != 1)
      y = Value::of(call1(b, "prims.mul", {convert_number(y, dtype), convert_number(*alpha, dtype)}));
    return Value::of(call1(b, "prims." + prim, {convert_number(x, dtype), convert_number(y, dtype)}));
  };
}

Value true_divide_impl(TraceBuilder& b, Args args, Kw) {
  std::vector<Value> xy = {arg(args, 0, "a"), arg(args, 1, "b")};
  DType dtype = meta::result_dtype(xy);
  if (!is_floating(dtype)) {  // true division of integers computes in the default float type
    dtype = DType::f32;
    for (auto& v : xy)
      if (v.is_proxy()) v = Value::of(call1(b, "prims.convert_element_type", {v, Value::of(dtype)}));
  }
  return Value::of(call1(b, "prims.div", {convert_number(xy[0], dtype), convert_number(xy[1], dtype)}));
}

SymbolImpl unary_impl(std::string prim) {
  return [prim](TraceBuilder& b, Args args, Kw) {
    return Value::of(call1(b, "prims." + prim, {Value::of(tensor_arg(args, 0, "a"))}));
  };
}

Value relu_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  T positive = gt(b, Value::of(a), Value::integer(0));
  return Value::of(where(b, positive, Value::of(a), Value::integer(0)));
}

Value sigmoid_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  T e = exp(b, neg(b, a));
  return Value::of(true_divide(b, Value::integer(1), Value::of(add(b, Value::integer(1), Value::of(e)))));
}

Value silu_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  return Value::of(mul(b, Value::of(a), Value::of(sigmoid(b, a))));
}

// gelu(x) = x * (0.5 + 0.5 * erf(x / sqrt(2)))  (Thunder's exact decomposition), or the tanh form.
Value gelu_impl(TraceBuilder& b, Args args, Kw kwargs) {
  T a = tensor_arg(args, 0, "a");
  const Value* approx = kwarg(kwargs, "approximate");
  std::string approximate = approx && approx->kind == Value::Kind::string ? approx->s : "none";
  Value x = Value::of(a);
  if (approximate == "none") {
    T scaled = true_divide(b, x, Value::floating(std::sqrt(2.0)));
    T e = erf(b, scaled);
    T half = mul(b, Value::floating(0.5), Value::of(e));
    T sum = add(b, Value::floating(0.5), Value::of(half));
    return Value::of(mul(b, x, Value::of(sum)));
  }
  if (approximate != "tanh") throw OpError("approximate must be 'none' or 'tanh', got '" + approximate + "'");
  T cube = pow(b, x, Value::integer(3));
  T inner = add(b, x, Value::of(mul(b, Value::floating(0.044715), Value::of(cube))));
  T t = tanh(b, mul(b, Value::floating(std::sqrt(2.0 / std::numbers::pi)), Value::of(inner)));
  T half_x = mul(b, Value::floating(0.5), x);
  return Value::of(mul(b, Value::of(half_x), Value::of(add(b, Value::integer(1), Value::of(t)))));
}

Value where_impl(TraceBuilder& b, Args args, Kw) {
  T cond = tensor_arg(args, 0, "condition");
  Value x = arg(args, 1, "a"), y = arg(args, 2, "b");
  bool any_tensor = (x.is_proxy() && x.proxy->is_tensor()) || (y.is_proxy() && y.proxy->is_tensor());
  if (any_tensor) {
    DType dtype = meta::result_dtype({x, y});
    x = convert_number(x, dtype);
    y = convert_number(y, dtype);
  }
  return Value::of(call1(b, "prims.where", {Value::of(cond), x, y}));
}

Value masked_fill_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a"), mask = tensor_arg(args, 1, "mask");
  if (mask->dtype != DType::b8)
    throw OpError("mask must be a bool tensor, got " + std::string(short_name(mask->dtype)));
  const Value& value = arg(args, 2, "value");
  Value fill = value.is_number() ? number_like(value.as_double(), a->dtype) : value;
  return Value::of(where(b, mask, fill, Value::of(a)));
}

Value convert_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  return Value::of(call1(b, "prims.convert_element_type", {Value::of(a), Value::of(dtype_arg(args, 1, "dtype"))}));
}

// detach(a): the same values, cut from autograd (its rule gives no gradient); a copy when executed.
Value detach_impl(TraceBuilder& b, Args args, Kw) {
  return Value::of(call1(b, "prims.shallow_copy", {Value::of(tensor_arg(args, 0, "a"))}));
}

Kwargs alpha1() { return {{"alpha", Value::integer(1)}}; }

}  // namespace

T add(TraceBuilder& b, const Value& a, const Value& c) { return call1(b, "ltorch.add", {a, c}, alpha1()); }
T sub(TraceBuilder& b, const Value& a, const Value& c) { return call1(b, "ltorch.sub", {a, c}, alpha1()); }
T mul(TraceBuilder& b, const Value& a, const Value& c) { return call1(b, "ltorch.mul", {a, c}); }
T true_divide(TraceBuilder& b, const Value& a, const Value& c) { return call1(b, "ltorch.true_divide", {a, c}); }
T pow(TraceBuilder& b, const Value& a, const Value& c) { return call1(b, "ltorch.pow", {a, c}); }
T eq(TraceBuilder& b, const Value& a, const Value& c) { return call1(b, "ltorch.eq", {a, c}); }
T ne(TraceBuilder& b, const Value& a, const Value& c) { return call1(b, "ltorch.ne", {a, c}); }
T lt(TraceBuilder& b, const Value& a, const Value& c) { return call1(b, "ltorch.lt", {a, c}); }
T le(TraceBuilder& b, const Value& a, const Value& c) { return call1(b, "ltorch.le", {a, c}); }
T gt(TraceBuilder& b, const Value& a, const Value& c) { return call1(b, "ltorch.gt", {a, c}); }
T ge(TraceBuilder& b, const Value& a, const Value& c) { return call1(b, "ltorch.ge", {a, c}); }
T maximum(TraceBuilder& b, const Value& a, const Value& c) { return call1(b, "ltorch.maximum", {a, c}); }

T neg(TraceBuilder& b, const T& a) { return call1(b, "ltorch.neg", {V(a)}); }
T exp(TraceBuilder& b, const T& a) { return call1(b, "ltorch.exp", {V(a)}); }
T log(TraceBuilder& b, const T& a) { return call1(b, "ltorch.log", {V(a)}); }
T tanh(TraceBuilder& b, const T& a) { return call1(b, "ltorch.tanh", {V(a)}); }
T erf(TraceBuilder& b, const T& a) { return call1(b, "ltorch.erf", {V(a)}); }
T rsqrt(TraceBuilder& b, const T& a) { return call1(b, "ltorch.rsqrt", {V(a)}); }
T sqrt(TraceBuilder& b, const T& a) { return call1(b, "ltorch.sqrt", {V(a)}); }
T relu(TraceBuilder& b, const T& a) { return call1(b, "ltorch.relu", {V(a)}); }
T sigmoid(TraceBuilder& b, const T& a) { return call1(b, "ltorch.sigmoid", {V(a)}); }
T silu(TraceBuilder& b, const T& a) { return call1(b, "ltorch.silu", {V(a)}); }
T gelu(TraceBuilder& b, const T& a, const std::string& approximate) {
  return call1(b, "ltorch.gelu", {V(a)}, {{"approximate", Value::string(approximate)}});
}

T where(TraceBuilder& b, const T& condition, const Value& a, const Value& c) {
  return call1(b, "ltorch.where", {V(condition), a, c});
}
T masked_fill(TraceBuilder& b, const T& a, const T& mask, const Value& value) {
  return call1(b, "ltorch.masked_fill", {V(a), V(mask), value});
}
T convert_element_type(TraceBuilder& b, const T& a, DType dtype) {
  return call1(b, "ltorch.convert_element_type", {V(a), Value::of(dtype)});
}

}  // namespace tv::ltorch

namespace tv::ops {

void register_elementwise() {
  using namespace tv::ltorch;
  const std::vector<std::string> ew = {"elementwise"};
  for (const char* n : {"add", "sub", "mul", "pow", "eq", "ne", "lt", "le", "gt", "ge", "maximum"})
    define(std::string("ltorch.") + n, false, ew, binary_impl(n));
  define("ltorch.true_divide", false, ew, true_divide_impl);
  for (const char* n : {"neg", "exp", "log", "tanh", "erf", "rsqrt", "sqrt"})
    define(std::string("ltorch.") + n, false, ew, unary_impl(n));
  define("ltorch.relu", false, ew, relu_impl);
  define("ltorch.sigmoid", false, ew, sigmoid_impl);
  define("ltorch.silu", false, ew, silu_impl);
  define("ltorch.gelu", false, ew, gelu_impl);
  define("ltorch.where", false, ew, where_impl);
  define("ltorch.masked_fill", false, ew, masked_fill_impl);
  define("ltorch.convert_element_type", false, ew, convert_impl);
  define("ltorch.detach", false, {}, detach_impl);
}

}  // namespace tv::ops
