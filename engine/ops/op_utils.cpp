#include "ops/op_utils.h"

#include <cmath>
#include <stdexcept>

namespace tv::ops {

const Symbol& define(std::string name, bool is_prim, std::vector<std::string> traits, SymbolImpl impl) {
  auto& registry = SymbolRegistry::global();
  if (const Symbol* existing = registry.find(name); existing && !existing->opaque) return *existing;  // already defined
  // add() upgrades an opaque placeholder the parser made in place, so parsed traces gain the impl.
  Symbol s;
  s.name = std::move(name);
  s.is_prim = is_prim;
  s.traits = std::move(traits);
  s.impl = std::move(impl);
  return registry.add(std::move(s));
}

void exec_rule(std::string_view name, exec::SimpleExecRule rule) { exec::set_exec_rule(op(name), std::move(rule)); }

void same_exec_rule(std::string_view name, std::string_view of) { exec::share_exec_rule(op(name), op(of)); }

void residual_rule(std::string_view name, exec::ResidualRule rule) { exec::set_residual_rule(op(name), std::move(rule)); }

void same_residual_rule(std::string_view name, std::string_view of) {
  auto rule = exec::residual_rule_of(op(of));
  if (!rule) throw std::logic_error("residual rule of " + std::string(name) + ": " + std::string(of) + " has none to share");
  exec::set_residual_rule(op(name), *rule);
}

const Symbol& op(std::string_view name) {
  const Symbol* s = SymbolRegistry::global().find(name);
  if (!s || s->opaque) throw std::logic_error("no op '" + std::string(name) + "' is defined (a registration bug)");
  return *s;
}

T call1(TraceBuilder& b, std::string_view name, std::vector<Value> args, Kwargs kwargs) {
  Value out = b.call(name, std::move(args), std::move(kwargs));
  T first;
  for_each_proxy(out, [&](const ProxyPtr& p) {
    if (!first) first = p;
  });
  return first;
}

const Value& arg(const std::vector<Value>& args, size_t i, const char* name) {
  if (i >= args.size())
    throw OpError("missing argument " + std::to_string(i) + " (" + name + "): got " + std::to_string(args.size()) +
                  " arguments");
  return args[i];
}

T tensor_arg(const std::vector<Value>& args, size_t i, const char* name) {
  const Value& v = arg(args, i, name);
  if (!v.is_proxy() || !v.proxy->is_tensor())
    throw OpError(std::string("argument '") + name + "' must be a tensor, got " + python_text(v));
  return v.proxy;
}

T optional_tensor_arg(const std::vector<Value>& args, size_t i, const char* name) {
  if (i >= args.size() || args[i].is_none()) return nullptr;
  return tensor_arg(args, i, name);
}

std::vector<int64_t> ints_arg(const std::vector<Value>& args, size_t i, const char* name) {
  const Value& v = arg(args, i, name);
  if (v.is_none()) return {};
  try {
    return v.as_ints();
  } catch (const std::exception&) {
    throw OpError(std::string("argument '") + name + "' must be an int or a tuple of ints, got " + python_text(v));
  }
}

int64_t int_arg(const std::vector<Value>& args, size_t i, const char* name) {
  const Value& v = arg(args, i, name);
  if (v.kind != Value::Kind::integer)
    throw OpError(std::string("argument '") + name + "' must be an int, got " + python_text(v));
  return v.i;
}

double number_arg(const std::vector<Value>& args, size_t i, const char* name) {
  const Value& v = arg(args, i, name);
  if (!v.is_number()) throw OpError(std::string("argument '") + name + "' must be a number, got " + python_text(v));
  return v.as_double();
}

bool bool_arg(const std::vector<Value>& args, size_t i, const char* name) {
  const Value& v = arg(args, i, name);
  if (v.kind != Value::Kind::boolean)
    throw OpError(std::string("argument '") + name + "' must be a bool, got " + python_text(v));
  return v.b;
}

DType dtype_arg(const std::vector<Value>& args, size_t i, const char* name) {
  const Value& v = arg(args, i, name);
  if (v.kind != Value::Kind::dtype)
    throw OpError(std::string("argument '") + name + "' must be a dtype, got " + python_text(v));
  return v.dtype;
}

Device device_arg(const std::vector<Value>& args, size_t i, const char* name) {
  const Value& v = arg(args, i, name);
  if (v.kind == Value::Kind::device) return v.device;
  if (v.kind == Value::Kind::string)
    if (auto d = Device::parse(v.s)) return *d;
  throw OpError(std::string("argument '") + name + "' must be a device, got " + python_text(v));
}

const Value* kwarg(const Kwargs& kwargs, std::string_view name) {
  for (const auto& [k, v] : kwargs)
    if (k == name) return &v;
  return nullptr;
}

void require_floating(const T& a, const char* op) {
  if (!is_floating(a->dtype))
    throw OpError(std::string(op) + " needs a floating tensor, got " + std::string(short_name(a->dtype)));
}

std::vector<Value> by_position(const std::vector<Value>& args, const Kwargs& kwargs,
                               const std::vector<const char*>& names) {
  std::vector<Value> out = args;
  for (size_t i = args.size(); i < names.size(); ++i)
    out.push_back(kwarg(kwargs, names[i]) ? *kwarg(kwargs, names[i]) : Value::none());
  return out;
}

void check_seed(const Value& seed, const char* op) {
  if (seed.kind == Value::Kind::integer) return;
  if (seed.is_proxy() && seed.proxy->is_tensor() && seed.proxy->shape.empty() && is_integral(seed.proxy->dtype) &&
      seed.proxy->dtype != DType::b8)
    return;
  throw OpError(std::string(op) + "'s seed must be an int or an integer tensor of shape [], got " + python_text(seed));
}

Value number_like(double v, DType dtype) {
  if (is_floating(dtype)) return Value::floating(v);
  if (dtype == DType::b8) return Value::boolean(v != 0);
  return Value::integer(static_cast<int64_t>(v));
}

Value convert_number(const Value& v, DType dtype) {
  if (!v.is_number()) return v;
  if (is_floating(dtype) && v.kind != Value::Kind::floating) return Value::floating(v.as_double());
  if (dtype != DType::b8 && !is_floating(dtype) && v.kind == Value::Kind::boolean) return Value::integer(v.b);
  return v;
}

bool output_requires_grad(const std::vector<Value>& inputs, DType out) {
  return is_floating(out) && any_requires_grad(inputs);
}

}  // namespace tv::ops
