// Gradient rules of the elementwise ops (ltorch.* and the matching prims.*).
// Binary rules compute the grad at the broadcast shape and sum it down to each operand
// (grad::reduce_like); numbers get None. Thunder's forms are kept where the fixtures show them:
// mul(a, b) -> (mul(b, g), mul(a, g)); erf -> mul(mul(2/sqrt(pi), exp(neg(pow(a, 2)))), g).
#include <cmath>
#include <numbers>

#include "ops/ltorch.h"
#include "ops/grad_rules.h"

namespace tv {

namespace {

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
  for (const char* n : names) register_grad_rule(n, rule);
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

Out pow_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  Value g = cts[0];
  const Value &x = f.args[0], &y = f.args[1];
  T ga = nullptr, gb = nullptr;
  if (tensor_at(f, 0)) {  // g * y * x^(y-1)
    Value y1 = y.is_number() ? num(y.as_double() - 1) : V(sub(b, y, Value::integer(1)));
    ga = mul(b, g, V(mul(b, y, V(pow(b, x, y1)))));
  }
  if (tensor_at(f, 1)) {  // g * out * log(x)
    T logx = x.is_number() ? nullptr : log(b, x.proxy);
    Value lx = logx ? V(logx) : num(std::log(x.as_double()));
    gb = mul(b, g, V(mul(b, V(f.output()), lx)));
  }
  return {reduce_like(b, ga, tensor_at(f, 0)), reduce_like(b, gb, tensor_at(f, 1))};
}

// torch's rule: ties split the grad in half.
Out maximum_rule(TraceBuilder& b, const BoundSymbol& f, Cts cts) {
  Value g = cts[0];
  const Value &x = f.args[0], &y = f.args[1];
  T tie = eq(b, x, y);
  T half = where(b, tie, V(true_divide(b, g, num(2))), g);
  T ga = tensor_at(f, 0) ? where(b, lt(b, x, y), num(0), V(half)) : nullptr;
  T gb = tensor_at(f, 1) ? where(b, gt(b, x, y), num(0), V(half)) : nullptr;
  return {reduce_like(b, ga, tensor_at(f, 0)), reduce_like(b, gb, tensor_at(f, 1))};
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

}  // namespace

void register_elementwise_grads() {
  both({"ltorch.add", "prims.add"}, add_rule);
  both({"ltorch.sub", "prims.sub"}, sub_rule);
  both({"ltorch.mul", "prims.mul"}, mul_rule);
  both({"ltorch.true_divide", "prims.div"}, div_rule);
  both({"ltorch.pow", "prims.pow"}, pow_rule);
  both({"ltorch.maximum", "prims.maximum"}, maximum_rule);
  for (const char* n : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    register_not_differentiable(std::string("ltorch.") + n);
    register_not_differentiable(std::string("prims.") + n);
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
  register_grad_rule("ltorch.relu", unary([](TraceBuilder& b, const T&, const T& out, const T& g) {
                       return where(b, gt(b, V(out), num(0)), V(g), num(0));
                     }));
  register_grad_rule("ltorch.sigmoid", unary([](TraceBuilder& b, const T&, const T& out, const T& g) {
                       return mul(b, V(g), V(mul(b, V(out), V(sub(b, num(1), V(out))))));
                     }));
  register_grad_rule("ltorch.silu", unary([](TraceBuilder& b, const T& a, const T&, const T& g) {
                       T s = sigmoid(b, a);  // g * s * (1 + a * (1 - s))
                       T inner = add(b, num(1), V(mul(b, V(a), V(sub(b, num(1), V(s))))));
                       return mul(b, V(g), V(mul(b, V(s), V(inner))));
                     }));
  register_grad_through_decomposition("ltorch.gelu");  // as Thunder: differentiate x * (0.5 + 0.5 erf(x/√2))

  both({"ltorch.where", "prims.where"}, where_rule);
  register_grad_rule("ltorch.masked_fill", masked_fill_rule);
  both({"ltorch.convert_element_type", "prims.convert_element_type"}, convert_rule);
  register_grad_rule("prims.shallow_copy", identity_rule);
  register_not_differentiable("ltorch.detach");
}

}  // namespace tv
