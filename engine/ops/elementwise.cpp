// Elementwise ltorch ops: arithmetic, comparisons, unary math, clamp, activations, where, tril and
// triu (a where over an arange mask), dtype casts, detach.
// Binary ops convert their Python numbers to the kind of the result (`2` -> `2.0` for a float
// tensor) before calling the prim; activations are compositions of other ltorch ops.
// The file holds, in order, each op's meta and decomposition, its gradient rule (and that of the
// prim of the same name), its execution rule.
#include <cmath>
#include <numbers>
#include <optional>
#include <utility>

#include "ops/grad_rules.h"
#include "ops/ltorch.h"
#include "ops/meta.h"
#include "ops/op_utils.h"
#include "runtime/rule_util.h"

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

// clamp(a, min=None, max=None) as Thunder decomposes it: where(a < min, min, a), then the same
// against max; NaN stays NaN, and the gradient passes where min <= a <= max.
Value clamp_impl(TraceBuilder& b, Args args, Kw kwargs) {
  T a = tensor_arg(args, 0, "a");
  const Value* lo = args.size() > 1 ? &args[1] : kwarg(kwargs, "min");
  const Value* hi = args.size() > 2 ? &args[2] : kwarg(kwargs, "max");
  if ((!lo || lo->is_none()) && (!hi || hi->is_none())) throw OpError("clamp needs at least one of min and max");
  T out = a;
  for (auto [bound, below] : {std::pair{lo, true}, std::pair{hi, false}}) {
    if (!bound || bound->is_none()) continue;
    if (!bound->is_number() && !(bound->is_proxy() && bound->proxy->is_tensor()))
      throw OpError("clamp: min and max must be numbers or tensors, got " + python_text(*bound));
    Value limit = convert_number(*bound, a->dtype);
    T beyond = below ? lt(b, Value::of(out), limit) : gt(b, Value::of(out), limit);
    out = where(b, beyond, limit, Value::of(out));
  }
  return Value::of(out);
}

// hardtanh(a, min_val=-1, max_val=1) (relu6: 0, 6): a clamped to [min_val, max_val], with torch's
// hardtanh_backward gradient, zero at the bounds themselves (clamp's passes there): a equal to a
// bound takes the bound's branch of the where.
std::pair<Value, Value> hardtanh_bounds(const Value* lo, const Value* hi, DType dtype) {
  auto bound = [&](const Value* v, const char* name, double fallback) {
    if (v && !v->is_none() && !v->is_number())
      throw OpError(std::string("hardtanh: ") + name + " must be a number, got " + python_text(*v));
    return convert_number(v && !v->is_none() ? *v : Value::floating(fallback), dtype);
  };
  return {bound(lo, "min_val", -1.0), bound(hi, "max_val", 1.0)};
}

std::pair<Value, Value> hardtanh_bounds(Args args, Kw kwargs, DType dtype) {
  return hardtanh_bounds(args.size() > 1 ? &args[1] : kwarg(kwargs, "min_val"),
                         args.size() > 2 ? &args[2] : kwarg(kwargs, "max_val"), dtype);
}

Value hardtanh_impl(TraceBuilder& b, Args args, Kw kwargs) {
  T a = tensor_arg(args, 0, "a");
  auto [lo, hi] = hardtanh_bounds(args, kwargs, a->dtype);
  T below_max = where(b, ge(b, Value::of(a), hi), hi, Value::of(a));
  return Value::of(where(b, le(b, Value::of(a), lo), lo, Value::of(below_max)));
}

// hardtanh_backward(grad, output, min_val, max_val): grad where min_val < output < max_val, else 0
// (torch's hardtanh_backward, read from the output as relu's gradient is: the output is strictly
// inside exactly where the input is).
Value hardtanh_backward_impl(TraceBuilder& b, Args args, Kw) {
  T g = tensor_arg(args, 0, "grad"), out = tensor_arg(args, 1, "output");
  if (g->shape != out->shape)
    throw OpError("hardtanh_backward: grad " + shape_text(g->shape) + " and output " + shape_text(out->shape) +
                  " differ in shape");
  if (args.size() != 4) throw OpError("hardtanh_backward takes grad, output, min_val and max_val");
  auto [lo, hi] = hardtanh_bounds(&args[2], &args[3], out->dtype);
  T inside_max = where(b, lt(b, Value::of(out), hi), Value::of(g), number_like(0, g->dtype));
  return Value::of(where(b, gt(b, Value::of(out), lo), Value::of(inside_max), number_like(0, g->dtype)));
}

// tril(a, diagonal=0) / triu: a where column - row <= diagonal (>= for triu) over the last two dims,
// else 0, with the mask built from two aranges.
SymbolImpl triangle_impl(bool lower) {
  return [lower](TraceBuilder& b, Args args, Kw kwargs) {
    T a = tensor_arg(args, 0, "a");
    const Value* d = args.size() > 1 ? &args[1] : kwarg(kwargs, "diagonal");
    int64_t diagonal = d && !d->is_none() ? d->i : 0;
    if (a->shape.size() < 2)
      throw OpError(std::string(lower ? "tril" : "triu") + " needs a tensor of 2 or more dims, got " + shape_text(a->shape));
    int64_t rows = a->shape[a->shape.size() - 2], cols = a->shape.back();
    T row = unsqueeze(b, arange(b, rows, a->device), 1), col = unsqueeze(b, arange(b, cols, a->device), 0);
    T offset = sub(b, Value::of(col), Value::of(row));  // [rows, cols]
    T keep = lower ? le(b, Value::of(offset), Value::integer(diagonal)) : ge(b, Value::of(offset), Value::integer(diagonal));
    return Value::of(where(b, keep, Value::of(a), number_like(0, a->dtype)));
  };
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

// detach(a) and clone(a): the same values. detach is cut from autograd (its rule gives no
// gradient); clone's gradient is the cotangent, and its execution rule makes a new tensor, so that
// nothing written into `a` later (a buffer's running update, the caller's input) reaches it.
Value same_values_impl(TraceBuilder& b, Args args, Kw) {
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

// ---- Gradient rules ----
// Gradient rules of the elementwise ops (ltorch.* and the matching prims.*).
// Binary rules compute the grad at the broadcast shape and sum it down to each operand
// (grad::reduce_like); numbers get None. Thunder's forms are kept where the fixtures show them:
// mul(a, b) -> (mul(b, g), mul(a, g)); erf -> mul(mul(2/sqrt(pi), exp(neg(pow(a, 2)))), g).

namespace tv {

namespace {

using ops::op;

using namespace tv::ltorch;
using grad::reduce_like;
using grad::tensor_at;
using Cts = const std::vector<Value>&;
using Out = std::vector<Value>;

Value V(const ProxyPtr& p) { return p ? Value::of(p) : Value::none(); }
Value num(double v) { return Value::floating(v); }

double alpha_of(const BoundSymbol& f) {
  for (const auto& [k, v] : f.kwargs)
    if (k == "alpha" && v.is_number()) return v.as_double();
  return 1.0;
}

// Registers `rule` under ltorch.<name> and each extra name (prims with the same arguments).
void both(std::initializer_list<const char*> names, const GradFn& rule) {
  for (const char* n : names) register_grad_rule(op(n), rule);
}

Out add_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T g = cts[0].proxy;
  double alpha = alpha_of(f);
  T gb = alpha == 1 || !tensor_at(f, 1) ? g : mul(b, V(g), num(alpha));
  return {reduce_like(b, g, tensor_at(f, 0)), reduce_like(b, gb, tensor_at(f, 1))};
}

Out sub_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T g = cts[0].proxy;
  double alpha = alpha_of(f);
  T gb = !tensor_at(f, 1) ? nullptr : alpha == 1 ? neg(b, g) : mul(b, V(g), num(-alpha));
  return {reduce_like(b, g, tensor_at(f, 0)), reduce_like(b, gb, tensor_at(f, 1))};
}

Out mul_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  Value g = cts[0];
  T ga = tensor_at(f, 0) ? mul(b, f.args[1], g) : nullptr;
  T gb = tensor_at(f, 1) ? mul(b, f.args[0], g) : nullptr;
  return {reduce_like(b, ga, tensor_at(f, 0)), reduce_like(b, gb, tensor_at(f, 1))};
}

Out div_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  Value g = cts[0];
  T ga = tensor_at(f, 0) ? true_divide(b, g, f.args[1]) : nullptr;
  T gb = nullptr;  // -g * a / b^2 = -(g * out) / b
  if (tensor_at(f, 1)) gb = neg(b, true_divide(b, V(mul(b, g, V(f.output()))), f.args[1]));
  return {reduce_like(b, ga, tensor_at(f, 0)), reduce_like(b, gb, tensor_at(f, 1))};
}

// torch's pow_backward: the grad of x is 0 where the exponent is 0 (not 0 * x^-1, NaN at x = 0), and
// the exponent's is 0 where x is 0 and the exponent >= 0 (not out * log(0) = 0 * -inf).
Out pow_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  Value g = cts[0];
  const Value &x = f.args[0], &y = f.args[1];
  T ga = nullptr, gb = nullptr;
  if (T a = tensor_at(f, 0)) {  // g * y * x^(y-1)
    if (y.is_number() && y.as_double() == 0) {
      ga = zeros(b, a->shape, a->dtype, a->device);
    } else {
      Value y1 = y.is_number() ? num(y.as_double() - 1) : V(sub(b, y, Value::integer(1)));
      ga = mul(b, g, V(mul(b, y, V(pow(b, x, y1)))));
      if (!y.is_number()) ga = where(b, eq(b, y, Value::integer(0)), num(0), V(ga));
    }
  }
  if (tensor_at(f, 1)) {  // g * out * log(x), 0 where x == 0 and y >= 0
    Value lx = x.is_number() ? num(std::log(x.as_double())) : V(log(b, x.proxy));
    T local = mul(b, V(f.output()), lx);
    if (!x.is_number() || x.as_double() == 0) {
      Value at_zero = x.is_number() ? num(0) : V(where(b, eq(b, x, Value::integer(0)), num(0), V(local)));
      local = where(b, ge(b, y, Value::integer(0)), at_zero, V(local));
    }
    gb = mul(b, g, V(local));
  }
  return {reduce_like(b, ga, tensor_at(f, 0)), reduce_like(b, gb, tensor_at(f, 1))};
}

// maximum and minimum, torch's rule: the grad goes to the operand that was taken; ties split it in half.
GradFn extremum_rule(bool is_max) {
  return [is_max](TraceBuilder& b, const BoundSymbol& f, Cts cts) -> Out {
    Value g = cts[0];
    const Value &x = f.args[0], &y = f.args[1];
    T tie = eq(b, x, y);
    T half = where(b, tie, V(true_divide(b, g, num(2))), g);
    T x_lost = is_max ? lt(b, x, y) : gt(b, x, y);
    T y_lost = is_max ? gt(b, x, y) : lt(b, x, y);
    T ga = tensor_at(f, 0) ? where(b, x_lost, num(0), V(half)) : nullptr;
    T gb = tensor_at(f, 1) ? where(b, y_lost, num(0), V(half)) : nullptr;
    return {reduce_like(b, ga, tensor_at(f, 0)), reduce_like(b, gb, tensor_at(f, 1))};
  };
}

// A unary rule from a function of (a, out) giving the local derivative to multiply g by.
GradFn unary(std::function<T(TraceBuilder&, const T& a, const T& out, const T& g)> vjp) {
  return [vjp](TraceBuilder& b, const BoundSymbol& f, Cts cts) -> Out {
    T a = tensor_at(f, 0);
    Out out(f.args.size());
    out[0] = reduce_like(b, vjp(b, a, f.output(), cts[0].proxy), a);
    return out;
  };
}

Out where_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  Value g = cts[0], cond = f.args[0];
  T ga = tensor_at(f, 1) ? where(b, cond.proxy, g, num(0)) : nullptr;
  T gb = tensor_at(f, 2) ? where(b, cond.proxy, num(0), g) : nullptr;
  return {Value::none(), reduce_like(b, ga, tensor_at(f, 1)), reduce_like(b, gb, tensor_at(f, 2))};
}

Out masked_fill_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T ga = where(b, tensor_at(f, 1), num(0), cts[0]);
  return {reduce_like(b, ga, tensor_at(f, 0)), Value::none(), Value::none()};
}

Out convert_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  T a = tensor_at(f, 0);
  return {is_floating(a->dtype) ? reduce_like(b, cts[0].proxy, a) : Value::none(), Value::none()};
}

Out identity_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  Out out(f.args.size());
  out[0] = reduce_like(b, cts[0].proxy, tensor_at(f, 0));
  return out;
}

void register_elementwise_gradients() {
  both({"ltorch.add", "prims.add"}, add_rule);
  both({"ltorch.sub", "prims.sub"}, sub_rule);
  both({"ltorch.mul", "prims.mul"}, mul_rule);
  both({"ltorch.true_divide", "prims.div"}, div_rule);
  both({"ltorch.pow", "prims.pow"}, pow_rule);
  both({"ltorch.maximum", "prims.maximum"}, extremum_rule(true));
  both({"ltorch.minimum", "prims.minimum"}, extremum_rule(false));
  for (const char* n : {"ltorch.sign", "prims.sign", "ltorch.bitwise_not", "prims.bitwise_not"})
    register_not_differentiable(op(n));
  both({"ltorch.abs", "prims.abs"}, unary([](TraceBuilder& b, const T& a, const T&, const T& g) {
    return mul(b, V(g), V(ops::call1(b, "ltorch.sign", {V(a)})));
  }));
  both({"ltorch.sin", "prims.sin"}, unary([](TraceBuilder& b, const T& a, const T&, const T& g) {
    return mul(b, V(g), V(ops::call1(b, "ltorch.cos", {V(a)})));
  }));
  both({"ltorch.cos", "prims.cos"}, unary([](TraceBuilder& b, const T& a, const T&, const T& g) {
    return neg(b, mul(b, V(g), V(ops::call1(b, "ltorch.sin", {V(a)}))));
  }));
  both({"ltorch.reciprocal", "prims.reciprocal"}, unary([](TraceBuilder& b, const T&, const T& out, const T& g) {
    return neg(b, mul(b, V(g), V(mul(b, V(out), V(out)))));
  }));
  for (const char* n : {"ltorch.clamp", "ltorch.tril", "ltorch.triu"}) register_grad_through_decomposition(op(n));
  for (const char* n : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    register_not_differentiable(op(std::string("ltorch.") + n));
    register_not_differentiable(op(std::string("prims.") + n));
  }

  both({"ltorch.neg", "prims.neg"}, unary([](TraceBuilder& b, const T&, const T&, const T& g) { return neg(b, g); }));
  both({"ltorch.exp", "prims.exp"},
       unary([](TraceBuilder& b, const T&, const T& out, const T& g) { return mul(b, V(g), V(out)); }));
  both({"ltorch.log", "prims.log"},
       unary([](TraceBuilder& b, const T& a, const T&, const T& g) { return true_divide(b, V(g), V(a)); }));
  both({"ltorch.tanh", "prims.tanh"}, unary([](TraceBuilder& b, const T&, const T& out, const T& g) {
         return mul(b, V(g), V(sub(b, num(1), V(mul(b, V(out), V(out))))));
       }));
  both({"ltorch.erf", "prims.erf"}, unary([](TraceBuilder& b, const T& a, const T&, const T& g) {
         T e = exp(b, neg(b, pow(b, V(a), Value::integer(2))));
         return mul(b, V(mul(b, num(2 / std::sqrt(std::numbers::pi)), V(e))), V(g));
       }));
  both({"ltorch.rsqrt", "prims.rsqrt"}, unary([](TraceBuilder& b, const T& a, const T& out, const T& g) {
         return mul(b, V(g), V(mul(b, num(-0.5), V(true_divide(b, V(out), V(a))))));
       }));
  both({"ltorch.sqrt", "prims.sqrt"}, unary([](TraceBuilder& b, const T&, const T& out, const T& g) {
         return true_divide(b, V(g), V(mul(b, num(2), V(out))));
       }));
  // torch's threshold_backward on the output: zero where out <= 0, so a NaN passes its gradient
  register_grad_rule(op("ltorch.relu"), unary([](TraceBuilder& b, const T&, const T& out, const T& g) {
                       return where(b, le(b, V(out), num(0)), num(0), V(g));
                     }));
  register_grad_rule(op("ltorch.hardtanh"), [](TraceBuilder& b, const BoundSymbol& f, Cts cts) -> Out {
    auto [lo, hi] = hardtanh_bounds(f.args, f.kwargs, f.output()->dtype);
    Out out(f.args.size());
    out[0] = reduce_like(b, call1(b, "ltorch.hardtanh_backward", {cts[0], V(f.output()), lo, hi}), tensor_at(f, 0));
    return out;
  });
  register_grad_through_decomposition(op("ltorch.hardtanh_backward"));
  register_grad_rule(op("ltorch.sigmoid"), unary([](TraceBuilder& b, const T&, const T& out, const T& g) {
                       return mul(b, V(g), V(mul(b, V(out), V(sub(b, num(1), V(out))))));
                     }));
  register_grad_rule(op("ltorch.silu"), unary([](TraceBuilder& b, const T& a, const T&, const T& g) {
                       T s = sigmoid(b, a);  // g * s * (1 + a * (1 - s))
                       T inner = add(b, num(1), V(mul(b, V(a), V(sub(b, num(1), V(s))))));
                       return mul(b, V(g), V(mul(b, V(s), V(inner))));
                     }));
  register_grad_through_decomposition(op("ltorch.gelu"));  // as Thunder: differentiate x * (0.5 + 0.5 erf(x/√2))

  both({"ltorch.where", "prims.where"}, where_rule);
  register_grad_rule(op("ltorch.masked_fill"), masked_fill_rule);
  both({"ltorch.convert_element_type", "prims.convert_element_type"}, convert_rule);
  register_grad_rule(op("prims.shallow_copy"), identity_rule);
  register_grad_rule(op("ltorch.clone"), identity_rule);
  register_not_differentiable(op("ltorch.detach"));
}

}  // namespace

}  // namespace tv

// ---- Execution rules: direct at:: calls (faster and closer to eager than the decompositions) ----

namespace tv::exec {

namespace {

using namespace rules;
using ops::exec_rule;
using ops::same_exec_rule;

at::Scalar alpha_of(Kw k) {
  const RValue* a = rkwarg(k, "alpha");
  return a && !a->is_none() ? scalar_of(*a) : at::Scalar(int64_t{1});
}

void register_elementwise_execution() {
  exec_rule("ltorch.add", [](Args a, Kw k) {
    at::Scalar alpha = alpha_of(k);
    return binary(a, [alpha](TT x, TT y) { return at::add(x, y, alpha); });
  });
  exec_rule("ltorch.sub", [](Args a, Kw k) {
    at::Scalar alpha = alpha_of(k);
    return binary(a, [alpha](TT x, TT y) { return at::sub(x, y, alpha); });
  });
  exec_rule("ltorch.mul", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::mul(x, y); }); });
  exec_rule("ltorch.true_divide", [](Args a, Kw) { return binary(a, [](TT x, TT y) { return at::true_divide(x, y); }); });
  exec_rule("ltorch.pow", [](Args a, Kw) { return power(a); });
  for (const char* n : {"eq", "ne", "lt", "le", "gt", "ge", "maximum"})
    same_exec_rule(std::string("ltorch.") + n, std::string("prims.") + n);
  for (const char* n : {"neg", "exp", "log", "tanh", "erf", "rsqrt", "sqrt", "abs", "sign", "sin", "cos", "reciprocal",
                        "bitwise_not", "minimum"})
    same_exec_rule(std::string("ltorch.") + n, std::string("prims.") + n);
  for (bool lower : {true, false})
    exec_rule(lower ? "ltorch.tril" : "ltorch.triu", [lower](Args a, Kw k) {
      const RValue* d = argument(a, 1, k, "diagonal");
      int64_t diagonal = d && !d->is_none() ? d->integer_value() : 0;
      const at::Tensor& t = tensor_at(a, 0, "a");
      return RValue::of(lower ? at::tril(t, diagonal) : at::triu(t, diagonal));
    });
  exec_rule("ltorch.clamp", [](Args a, Kw k) {
    const RValue *lo = argument(a, 1, k, "min"), *hi = argument(a, 2, k, "max");
    const at::Tensor& t = tensor_at(a, 0, "a");
    if ((lo && lo->is_tensor()) || (hi && hi->is_tensor())) {
      auto bound = [](const RValue* v) { return v && !v->is_none() ? c10::optional<at::Tensor>(operand(*v)) : c10::nullopt; };
      return RValue::of(at::clamp(t, bound(lo), bound(hi)));
    }
    auto bound = [](const RValue* v) { return v && !v->is_none() ? c10::optional<at::Scalar>(scalar_of(*v)) : c10::nullopt; };
    return RValue::of(at::clamp(t, bound(lo), bound(hi)));
  });
  exec_rule("ltorch.hardtanh", [](Args a, Kw k) {
    const RValue *lo = argument(a, 1, k, "min_val"), *hi = argument(a, 2, k, "max_val");
    auto bound = [](const RValue* v, double fallback) { return v && !v->is_none() ? scalar_of(*v) : at::Scalar(fallback); };
    return RValue::of(at::hardtanh(tensor_at(a, 0, "a"), bound(lo, -1.0), bound(hi, 1.0)));
  });
  exec_rule("ltorch.hardtanh_backward", [](Args a, Kw) {
    return RValue::of(at::hardtanh_backward(tensor_at(a, 0, "grad"), tensor_at(a, 1, "output"), scalar_of(a[2]),
                                            scalar_of(a[3])));
  });
  exec_rule("ltorch.clone", [](Args a, Kw) { return RValue::of(tensor_at(a, 0, "a").clone(at::MemoryFormat::Contiguous)); });
  exec_rule("ltorch.relu", [](Args a, Kw) { return RValue::of(at::relu(tensor_at(a, 0, "a"))); });
  exec_rule("ltorch.sigmoid", [](Args a, Kw) { return RValue::of(at::sigmoid(tensor_at(a, 0, "a"))); });
  exec_rule("ltorch.silu", [](Args a, Kw) { return RValue::of(at::silu(tensor_at(a, 0, "a"))); });
  exec_rule("ltorch.gelu", [](Args a, Kw k) {
    std::string approximate = "none";
    if (const RValue* v = rkwarg(k, "approximate")) approximate = v->s;
    else if (a.size() > 1 && a[1].kind == RValue::Kind::string) approximate = a[1].s;
    return RValue::of(at::gelu(tensor_at(a, 0, "a"), approximate));
  });
  exec_rule("ltorch.where", [](Args a, Kw) {
    return RValue::of(where(tensor_at(a, 0, "condition"), rarg(a, 1, "a"), rarg(a, 2, "b")));
  });
  exec_rule("ltorch.masked_fill", [](Args a, Kw) {
    const at::Tensor& t = tensor_at(a, 0, "a");
    const RValue& v = rarg(a, 2, "value");
    if (v.is_tensor()) return RValue::of(at::where(tensor_at(a, 1, "mask"), v.t.to(t.scalar_type()), t));
    return RValue::of(t.masked_fill(tensor_at(a, 1, "mask"), scalar_of(v)));
  });
  same_exec_rule("ltorch.convert_element_type", "prims.convert_element_type");
  // A view cut from autograd (the engine's own runs are below autograd; the eager reference is not).
  exec_rule("ltorch.detach", [](Args a, Kw) { return RValue::of(tensor_at(a, 0, "a").detach()); });
}

}  // namespace

}  // namespace tv::exec

namespace tv::ops {

void register_elementwise() {
  using namespace tv::ltorch;
  const std::vector<std::string> ew = {"elementwise"};
  for (const char* n : {"add", "sub", "mul", "pow", "eq", "ne", "lt", "le", "gt", "ge", "maximum", "minimum"})
    define(std::string("ltorch.") + n, false, ew, binary_impl(n));
  define("ltorch.true_divide", false, ew, true_divide_impl);
  for (const char* n : {"neg", "exp", "log", "tanh", "erf", "rsqrt", "sqrt", "abs", "sign", "sin", "cos", "reciprocal",
                        "bitwise_not"})
    define(std::string("ltorch.") + n, false, ew, unary_impl(n));
  define("ltorch.clamp", false, ew, clamp_impl);
  define("ltorch.tril", false, ew, triangle_impl(true));
  define("ltorch.triu", false, ew, triangle_impl(false));
  define("ltorch.clone", false, {}, same_values_impl);
  define("ltorch.hardtanh", false, ew, hardtanh_impl);
  define("ltorch.hardtanh_backward", false, {}, hardtanh_backward_impl);
  define("ltorch.relu", false, ew, relu_impl);
  define("ltorch.sigmoid", false, ew, sigmoid_impl);
  define("ltorch.silu", false, ew, silu_impl);
  define("ltorch.gelu", false, ew, gelu_impl);
  define("ltorch.where", false, ew, where_impl);
  define("ltorch.masked_fill", false, ew, masked_fill_impl);
  define("ltorch.convert_element_type", false, ew, convert_impl);
  define("ltorch.detach", false, {}, same_values_impl);
  register_elementwise_gradients();
  exec::register_elementwise_execution();
}

}  // namespace tv::ops
