#include "codegen/elementwise.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "passes/residual_epilogues.h"

namespace tv::codegen {
namespace {

constexpr size_t kMaxTensors = 8;  // the jiterator's limit, for inputs and for outputs

enum class OpKind { add, sub, mul, div, neg, exp, log, erf, tanh, sqrt, rsqrt, sigmoid, pow, where };

std::optional<OpKind> op_kind(std::string_view name) {
  auto dot = name.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  std::string_view ns = name.substr(0, dot), op = name.substr(dot + 1);
  if (ns != "ltorch" && ns != "prims") return std::nullopt;
  static const std::pair<std::string_view, OpKind> table[] = {
      {"add", OpKind::add},     {"sub", OpKind::sub},   {"mul", OpKind::mul},         {"true_divide", OpKind::div},
      {"div", OpKind::div},     {"neg", OpKind::neg},   {"exp", OpKind::exp},         {"log", OpKind::log},
      {"erf", OpKind::erf},     {"tanh", OpKind::tanh}, {"sqrt", OpKind::sqrt},       {"rsqrt", OpKind::rsqrt},
      {"sigmoid", OpKind::sigmoid}, {"pow", OpKind::pow}, {"where", OpKind::where},
  };
  for (const auto& [n, k] : table)
    if (n == op) return k;
  return std::nullopt;
}

size_t arity(OpKind k) {
  switch (k) {
    case OpKind::add: case OpKind::sub: case OpKind::mul: case OpKind::div: case OpKind::pow: return 2;
    case OpKind::where: return 3;
    default: return 1;
  }
}

// A number literal as an expression of type T; nullopt for anything else.
std::optional<std::string> literal(const Value& v) {
  switch (v.kind) {
    case Value::Kind::boolean: return std::string(v.b ? "T(1)" : "T(0)");
    case Value::Kind::integer: return "T(" + std::to_string(v.i) + ")";
    case Value::Kind::floating: {
      if (std::isnan(v.f)) return std::string("T(NAN)");
      if (std::isinf(v.f)) return std::string(v.f > 0 ? "T(POS_INFINITY)" : "T(NEG_INFINITY)");
      char buf[40];
      std::snprintf(buf, sizeof buf, "%.17g", v.f);
      std::string s = buf;
      if (s.find_first_of(".eE") == std::string::npos) s += ".0";
      return "T(" + s + ")";
    }
    default: return std::nullopt;
  }
}

const Value* kwarg(const BoundSymbol& b, std::string_view name) {
  for (const auto& [k, v] : b.kwargs)
    if (k == name) return &v;
  return nullptr;
}

// The member's output shape and dtype when the generator can compute it, else nullopt.
struct Signature {
  std::vector<int64_t> shape;
  DType dtype;
};

std::optional<Signature> pointwise_signature(const BoundSymbol& m) {
  auto kind = op_kind(m.name());
  if (!kind || m.outputs.size() != 1) return std::nullopt;
  const Proxy& out = *m.outputs[0];
  if (out.kind != ProxyKind::tensor || !is_floating(out.dtype)) return std::nullopt;
  if (m.args.size() != arity(*kind)) return std::nullopt;
  for (const auto& [k, v] : m.kwargs) {
    bool ok = (k == "alpha" && (*kind == OpKind::add || *kind == OpKind::sub) && literal(v)) ||
              (k == "rounding_mode" && *kind == OpKind::div && v.kind == Value::Kind::none);
    if (!ok) return std::nullopt;
  }
  bool any_tensor = false;
  for (size_t i = 0; i < m.args.size(); ++i) {
    const Value& a = m.args[i];
    if (a.kind == Value::Kind::proxy) {
      const Proxy& p = *a.proxy;
      if (p.kind != ProxyKind::tensor) return std::nullopt;
      bool condition = *kind == OpKind::where && i == 0;
      if (p.dtype != out.dtype && !(condition && p.dtype == DType::b8)) return std::nullopt;
      any_tensor = true;
    } else if (!literal(a)) {
      return std::nullopt;
    }
  }
  if (!any_tensor) return std::nullopt;
  return Signature{out.shape, out.dtype};
}

// The expression computing member `m` from its operands' expressions.
std::string expression(const BoundSymbol& m, const std::vector<std::string>& x) {
  OpKind kind = *op_kind(m.name());
  auto scaled = [&](const std::string& b) {
    const Value* alpha = kwarg(m, "alpha");
    if (!alpha || (alpha->kind == Value::Kind::integer && alpha->i == 1) ||
        (alpha->kind == Value::Kind::floating && alpha->f == 1.0))
      return b;
    return *literal(*alpha) + " * " + b;
  };
  switch (kind) {
    case OpKind::add: return x[0] + " + " + scaled(x[1]);
    case OpKind::sub: return x[0] + " - " + scaled(x[1]);
    case OpKind::mul: return x[0] + " * " + x[1];
    case OpKind::div: return x[0] + " / " + x[1];
    case OpKind::neg: return "-" + x[0];
    case OpKind::exp: return "exp(" + x[0] + ")";
    case OpKind::log: return "log(" + x[0] + ")";
    case OpKind::erf: return "erf(" + x[0] + ")";
    case OpKind::tanh: return "tanh(" + x[0] + ")";
    case OpKind::sqrt: return "sqrt(" + x[0] + ")";
    case OpKind::rsqrt: return "rsqrt(" + x[0] + ")";
    case OpKind::sigmoid: return "T(1) / (T(1) + exp(-" + x[0] + "))";
    case OpKind::pow: {
      const Value& e = m.args[1];
      double v = e.kind == Value::Kind::integer ? double(e.i) : e.kind == Value::Kind::floating ? e.f : NAN;
      if (v == 2.0) return x[0] + " * " + x[0];  // as ATen's pow special-cases a square
      if (v == 0.5) return "sqrt(" + x[0] + ")";
      if (v == 1.0) return x[0];
      if (v == -1.0) return "T(1) / " + x[0];
      return "pow(" + x[0] + ", " + x[1] + ")";
    }
    case OpKind::where: return x[0] + " != T(0) ? " + x[1] + " : " + x[2];
  }
  return {};
}

double number_of(const Value& v) {
  switch (v.kind) {
    case Value::Kind::boolean: return v.b ? 1.0 : 0.0;
    case Value::Kind::integer: return double(v.i);
    default: return v.f;
  }
}

// The instruction computing member `m` from its operands: expression() as data.
PointwiseInstruction instruction(const BoundSymbol& m, std::vector<PointwiseOperand> x) {
  PointwiseInstruction in;
  in.operands = std::move(x);
  switch (*op_kind(m.name())) {
    case OpKind::add: in.op = PointwiseOp::add; break;
    case OpKind::sub: in.op = PointwiseOp::sub; break;
    case OpKind::mul: in.op = PointwiseOp::mul; break;
    case OpKind::div: in.op = PointwiseOp::div; break;
    case OpKind::neg: in.op = PointwiseOp::neg; break;
    case OpKind::exp: in.op = PointwiseOp::exp; break;
    case OpKind::log: in.op = PointwiseOp::log; break;
    case OpKind::erf: in.op = PointwiseOp::erf; break;
    case OpKind::tanh: in.op = PointwiseOp::tanh; break;
    case OpKind::sqrt: in.op = PointwiseOp::sqrt; break;
    case OpKind::rsqrt: in.op = PointwiseOp::rsqrt; break;
    case OpKind::sigmoid: in.op = PointwiseOp::sigmoid; break;
    case OpKind::where: in.op = PointwiseOp::where; break;
    case OpKind::pow: {
      in.op = PointwiseOp::pow;
      const Value& e = m.args[1];
      if (e.kind != Value::Kind::integer && e.kind != Value::Kind::floating) break;
      double v = number_of(e);
      if (v == 2.0) in.op = PointwiseOp::square;
      if (v == 0.5) in.op = PointwiseOp::sqrt;
      if (v == 1.0) in.op = PointwiseOp::copy;
      if (v == -1.0) in.op = PointwiseOp::reciprocal;
      if (in.op != PointwiseOp::pow) in.operands.resize(1);
      break;
    }
  }
  if (const Value* alpha = kwarg(m, "alpha")) in.alpha = number_of(*alpha);
  return in;
}

bool reads(const BoundSymbol& m, const std::string& name) {
  for (const auto& p : m.inputs())
    if (p->name == name) return true;
  return false;
}

// The kernel for members [first, last] of `region`; nullopt when it would exceed the jiterator's
// limits on inputs or outputs.
std::optional<ElementwiseKernel> make_kernel(const BoundSymbol& region, size_t first, size_t last) {
  const auto& members = region.subsymbols;
  ElementwiseKernel k;
  k.first_member = first;
  k.members = last - first + 1;
  k.dtype = members[first].outputs[0]->dtype;
  std::map<std::string, std::string> var;  // proxy name -> expression variable
  std::map<std::string, PointwiseOperand> operand_of;  // proxy name -> program operand
  std::string body;
  for (size_t i = first; i <= last; ++i) {
    const BoundSymbol& m = members[i];
    std::vector<std::string> operands;
    std::vector<PointwiseOperand> program_operands;
    for (const auto& a : m.args) {
      if (a.kind != Value::Kind::proxy) {
        operands.push_back(*literal(a));
        program_operands.push_back({PointwiseOperand::Kind::number, 0, number_of(a)});
        continue;
      }
      const std::string& name = a.proxy->name;
      if (!var.count(name)) {
        var[name] = "in" + std::to_string(k.inputs.size());
        operand_of[name] = {PointwiseOperand::Kind::input, k.inputs.size(), 0};
        k.inputs.push_back(name);
        k.bool_inputs.push_back(a.proxy->dtype == DType::b8);
      }
      operands.push_back(var[name]);
      program_operands.push_back(operand_of[name]);
    }
    std::string v = "v" + std::to_string(i - first);
    body += "  T " + v + " = " + expression(m, operands) + ";\n";
    var[m.outputs[0]->name] = v;
    operand_of[m.outputs[0]->name] = {PointwiseOperand::Kind::value, i - first, 0};
    k.program.push_back(instruction(m, std::move(program_operands)));
  }
  std::set<std::string> returned;
  for (const auto& o : region.outputs) returned.insert(o->name);
  std::string stores;
  for (size_t i = first; i <= last; ++i) {
    const std::string& name = members[i].outputs[0]->name;
    bool used = returned.count(name) > 0;
    for (size_t j = last + 1; j < members.size() && !used; ++j) used = reads(members[j], name);
    if (!used && !(i == last && k.outputs.empty())) continue;  // a kernel stores at least its last value
    stores += "  out" + std::to_string(k.outputs.size()) + " = " + var[name] + ";\n";
    k.outputs.push_back(name);
    k.output_values.push_back(i - first);
  }
  if (k.inputs.size() > kMaxTensors || k.outputs.size() > kMaxTensors) return std::nullopt;
  std::string params;
  for (size_t i = 0; i < k.inputs.size(); ++i) params += (i ? ", T in" : "T in") + std::to_string(i);
  for (size_t i = 0; i < k.outputs.size(); ++i) params += ", T& out" + std::to_string(i);
  std::string text = body + stores;
  char hash[24];
  std::snprintf(hash, sizeof hash, "%016zx", std::hash<std::string>{}(params + "\n" + text));
  k.name = std::string("tv_pointwise_") + hash;
  k.source = "template <typename T> void " + k.name + "(" + params + ") {\n" + text + "}\n";
  return k;
}

// Whether `name` is a region output or read by a member after `member`.
bool read_beyond(const BoundSymbol& region, size_t member, const std::string& name) {
  for (const auto& o : region.outputs)
    if (o->name == name) return true;
  for (size_t m = member + 1; m < region.subsymbols.size(); ++m)
    for (const auto& p : region.subsymbols[m].inputs())
      if (p->name == name) return true;
  return false;
}

}  // namespace

bool is_generated_pointwise(std::string_view symbol) { return op_kind(symbol).has_value(); }

size_t RegionPlan::kernels() const {
  size_t n = 0;
  for (const auto& s : steps) n += s.is_kernel;
  return n;
}

RegionPlan plan_region(const BoundSymbol& region) {
  RegionPlan plan;
  const auto& members = region.subsymbols;
  auto single = [&](size_t i) {
    RegionStep s;
    s.member = i;
    plan.steps.push_back(std::move(s));
  };
  for (size_t i = 0; i < members.size();) {
    size_t residual_arg = 0;
    if (i + 1 < members.size() && passes::feeds_add(members[i], members[i + 1], &residual_arg) &&
        !read_beyond(region, i + 1, members[i].outputs[0]->name)) {
      RegionStep s;
      s.member = i;
      s.residual_epilogue = true;
      s.residual_arg = residual_arg;
      plan.steps.push_back(std::move(s));
      i += 2;
      continue;
    }
    auto sig = pointwise_signature(members[i]);
    if (!sig) {
      single(i++);
      continue;
    }
    size_t last = i;
    while (last + 1 < members.size()) {
      auto next = pointwise_signature(members[last + 1]);
      if (!next || next->shape != sig->shape || next->dtype != sig->dtype) break;
      ++last;
    }
    // The longest run from i that fits the limits (a shorter run only loses fusion).
    std::optional<ElementwiseKernel> kernel;
    while (last > i && !(kernel = make_kernel(region, i, last))) --last;
    // A where alone too, on the CPU: ATen's CPU where of LibTorch 1.13 takes 3 ns an element (a
    // relu's backward, where(a <= 0, 0, g), 30 times eager's threshold_backward)
    const std::string& name = members[i].name();
    bool cpu = members[i].outputs[0]->device.kind == Device::Kind::cpu;
    if (!kernel && cpu && (name == "ltorch.where" || name == "prims.where")) kernel = make_kernel(region, i, i);
    if (!kernel) {
      single(i++);
      continue;
    }
    RegionStep s;
    s.is_kernel = true;
    s.kernel = std::move(*kernel);
    plan.steps.push_back(std::move(s));
    i = last + 1;
  }
  return plan;
}

}  // namespace tv::codegen
