#include "jit/captured.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <stdexcept>

#include "aten/convert.h"
#include "format/printer.h"
#include "jit/acquire.h"
#include "ops/aten_fallback.h"

namespace tv::jit {
namespace {

struct HeldTensor {
  std::string name;  // qualified ("fc1.weight") or the argument name
  ProxyPtr meta;     // shape, dtype, device, requires_grad as the prologue checks them
  bool buffer = false;
};

// What the prologue says the module holds, in the order it says it.
struct ModuleShape {
  std::vector<HeldTensor> inputs, tensors;
  std::vector<std::pair<std::string, AttrValue>> attributes;
  std::map<std::string, std::string> argument_of;  // proxy name -> input name or qualified tensor name
};

std::invalid_argument bad(const BoundSymbol& b, const std::string& what) {
  return std::invalid_argument("the captured prologue's `" + print_statement(b) + "`: " + what);
}

std::optional<AttrValue> attr_of(const Value& v) {
  switch (v.kind) {
    case Value::Kind::boolean: return AttrValue{v.b};
    case Value::Kind::integer: return AttrValue{v.i};
    case Value::Kind::floating: return AttrValue{v.f};
    case Value::Kind::string: return AttrValue{v.s};
    default: return std::nullopt;
  }
}

ModuleShape read_prologue(const Trace& prologue) {
  ModuleShape out;
  std::map<std::string, std::string> owner_path;  // module proxies: "" for the module, "bn" for its submodule
  std::map<std::string, std::string> attribute_of;  // attribute proxies -> qualified attribute name
  std::map<std::string, ProxyPtr> checked;          // proxies -> the tensor check's view of them
  std::string args_name;
  for (const auto& p : prologue.params)
    if (p.kind == ParamKind::varargs) args_name = p.proxy->name;
  for (const auto& b : prologue.body) {
    const std::string& n = b.name();
    auto arg_name = [&](size_t i) { return i < b.args.size() && b.args[i].is_proxy() ? b.args[i].proxy->name : ""; };
    if (n == "thunder.core.module.get_thunder_module" && b.output()) {
      owner_path[b.output()->name] = "";
    } else if (n == "get_submodule" && b.output() && owner_path.count(arg_name(0)) && b.args.size() > 1) {
      const std::string& parent = owner_path[arg_name(0)];
      owner_path[b.output()->name] = (parent.empty() ? "" : parent + ".") + b.args[1].s;
    } else if ((n == "get_parameter" || n == "get_buffer") && b.output() && b.args.size() > 1 &&
               b.args[1].kind == Value::Kind::string) {
      out.tensors.push_back({b.args[1].s, b.output(), n == "get_buffer"});
      out.argument_of[b.output()->name] = b.args[1].s;
    } else if (n == "unpack_key" && b.output() && arg_name(0) == args_name && !args_name.empty()) {
      out.inputs.push_back({b.output()->name, b.output(), false});
      out.argument_of[b.output()->name] = b.output()->name;
    } else if (n == "unpack_attr" && b.output() && owner_path.count(arg_name(0)) && b.args.size() > 1) {
      const std::string& owner = owner_path[arg_name(0)];
      attribute_of[b.output()->name] = (owner.empty() ? "" : owner + ".") + b.args[1].s;
    } else if (n == "prims.check_tensor_shape_and_metadata" && b.args.size() >= 5 && b.args[0].is_proxy()) {
      auto p = std::make_shared<Proxy>(*b.args[0].proxy);
      p->requires_grad = b.args[4].kind == Value::Kind::boolean && b.args[4].b;
      if (b.args[2].kind == Value::Kind::string)
        if (auto d = Device::parse(b.args[2].s)) p->device = *d;
      checked[p->name] = p;
    } else if ((n == "prims.check_number_type_and_value" || n == "prims.check_string_value") && b.args.size() > 1 &&
               b.args[0].is_proxy() && attribute_of.count(b.args[0].proxy->name)) {
      auto value = attr_of(b.args[1]);
      if (!value) throw bad(b, "an attribute whose expected value is not a number or a string");
      out.attributes.emplace_back(attribute_of[b.args[0].proxy->name], *value);
    }
  }
  for (auto* list : {&out.inputs, &out.tensors})
    for (auto& t : *list)
      if (auto it = checked.find(t.meta->name); it != checked.end()) t.meta = it->second;
  if (out.inputs.empty() && out.tensors.empty())
    throw std::invalid_argument("the captured prologue reads no input and no parameter: it does not describe a module");
  return out;
}

at::Tensor make_tensor_for(const HeldTensor& t, at::Generator& gen, const std::optional<Device>& device) {
  const Proxy& m = *t.meta;
  auto options = at::TensorOptions().dtype(aten::to_scalar_type(m.dtype));
  at::Tensor value;
  if (!is_floating(m.dtype)) {
    value = at::zeros(m.shape, options);
  } else if (t.buffer) {
    const bool variance = t.name.size() >= 3 && t.name.compare(t.name.size() - 3, 3, "var") == 0;
    value = variance ? at::ones(m.shape, options) : at::zeros(m.shape, options);
  } else {
    value = (at::randn(m.shape, gen) * 0.02).to(aten::to_scalar_type(m.dtype));
  }
  value = value.to(aten::to_device(device ? *device : m.device));
  if (m.requires_grad && is_floating(m.dtype)) value.requires_grad_(true);
  return value;
}

// The recorded tensor `key` of the program, as the prologue states it (shape and dtype checked).
at::Tensor stored_tensor(const CapturedProgram& program, const HeldTensor& t, const std::string& key,
                         const std::optional<Device>& device) {
  auto it = program.tensors->find(key);
  if (it == program.tensors->end())
    throw std::invalid_argument("model '" + program.name + "': the stored tensors have no '" + key +
                                "', which the captured prologue reads");
  const Proxy& m = *t.meta;
  const at::Tensor& stored = it->second;
  if (stored.sizes().vec() != m.shape || stored.scalar_type() != aten::to_scalar_type(m.dtype))
    throw std::invalid_argument("model '" + program.name + "': the stored '" + key + "' is " +
                                std::string(at::toString(stored.scalar_type())) + " " + at::str(stored.sizes()) +
                                ", the captured prologue checks " + std::string(short_name(m.dtype)) + " " +
                                at::str(c10::IntArrayRef(m.shape)));
  at::Tensor value = stored.detach().clone().to(aten::to_device(device ? *device : m.device));
  if (m.requires_grad && is_floating(m.dtype)) value.requires_grad_(true);
  return value;
}

Value substitute(const Value& v, const std::map<std::string, ProxyPtr>& env, const BoundSymbol& b) {
  if (v.is_proxy()) {
    auto it = env.find(v.proxy->name);
    if (it == env.end())
      throw std::invalid_argument("the captured computation's `" + print_statement(b) + "` reads " + v.proxy->name +
                                  ", which nothing before it defines");
    return Value::of(it->second);
  }
  if (!v.is_sequence() && v.kind != Value::Kind::dict) return v;
  Value out = v;
  for (auto& item : out.items) item = substitute(item, env, b);
  for (auto& [k, x] : out.entries) x = substitute(x, env, b);
  return out;
}

// The forward: the computation's top-level statements, replayed.
std::vector<ProxyPtr> replay(const Trace& computation, const ModuleShape& shape, ForwardContext& ctx) {
  std::map<std::string, ProxyPtr> env;
  for (const auto& p : computation.params) {
    const std::string& name = p.proxy->name;
    auto it = shape.argument_of.find(name);
    if (it == shape.argument_of.end())
      throw std::invalid_argument("the captured computation takes " + name + ", which its prologue does not unpack");
    bool input = false;
    for (const auto& i : shape.inputs) input = input || i.name == it->second;
    env[name] = input ? ctx.input(it->second) : ctx.param(it->second);
  }
  TraceBuilder& builder = ctx.builder();
  for (const auto& b : computation.body) {
    if (is_structural(b)) continue;  // its inputs, del, return
    builder.set_location(b.source ? *b.source : std::string());
    std::vector<Value> args;
    for (const auto& a : b.args) args.push_back(substitute(a, env, b));
    Kwargs kwargs;
    for (const auto& [k, a] : b.kwargs) kwargs.emplace_back(k, substitute(a, env, b));
    if (ops::is_fallback_name(b.name())) ops::fallback_symbol(b.name());  // registered on first use
    Value result;
    try {
      result = builder.call(b.name(), std::move(args), std::move(kwargs));
    } catch (const OpError& e) {
      throw std::invalid_argument("the captured computation's `" + print_statement(b) + "` cannot be traced again: " +
                                  e.what());
    }
    std::vector<ProxyPtr> made;
    for_each_proxy(result, [&](const ProxyPtr& p) { made.push_back(p); });
    if (made.size() != b.outputs.size())
      throw std::invalid_argument("the captured computation's `" + print_statement(b) + "` gives " +
                                  std::to_string(made.size()) + " values when traced again, not " +
                                  std::to_string(b.outputs.size()));
    for (size_t k = 0; k < made.size(); ++k) env[b.outputs[k]->name] = made[k];
  }
  std::vector<ProxyPtr> outputs;
  for_each_proxy(substitute(computation.returned(), env, computation.body.back()), [&](const ProxyPtr& p) {
    if (std::find(outputs.begin(), outputs.end(), p) == outputs.end()) outputs.push_back(p);
  });
  return outputs;
}

Module build(const CapturedProgram& program, const std::shared_ptr<const ModuleShape>& shape,
             const std::map<std::string, std::string>& params) {
  uint64_t seed = 0;
  std::optional<Device> device;
  for (const auto& [k, v] : params) {
    if (k == "seed") {
      size_t used = 0;
      try {
        seed = std::stoull(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != v.size() || v.empty() || v[0] == '-')
        throw std::invalid_argument("model '" + program.name + "': seed must be a non-negative integer, not '" + v + "'");
    } else if (k == "device") {
      device = Device::parse(v);
      if (!device) throw std::invalid_argument("model '" + program.name + "': bad device '" + v + "' (use cpu or cuda:N)");
    } else {
      throw std::invalid_argument("model '" + program.name + "' (rebuilt from a capture) has no parameter '" + k +
                                  "'; valid parameters: seed, device");
    }
  }
  at::Generator gen = at::detail::createCPUGenerator(seed);
  auto value_of = [&](const HeldTensor& t, const std::string& key) {
    return program.tensors ? stored_tensor(program, t, key, device) : make_tensor_for(t, gen, device);
  };
  Module m;
  m.name = program.name;
  for (const auto& t : shape->tensors) {
    at::Tensor value = value_of(t, (t.buffer ? "buffer:" : "parameter:") + t.name);
    if (t.buffer) m.add_buffer(t.name, value);
    else m.add_parameter(t.name, value);
  }
  for (size_t k = 0; k < shape->inputs.size(); ++k)
    m.add_input(shape->inputs[k].name, value_of(shape->inputs[k], "input:" + std::to_string(k)));
  for (const auto& [name, value] : shape->attributes) m.set_attribute(name, value);
  m.forward = [computation = program.computation, shape](ForwardContext& ctx) {
    return replay(*computation, *shape, ctx);
  };
  return m;
}

}  // namespace

ModelFactory captured_model(CapturedProgram program) {
  if (!program.prologue || !program.computation)
    throw std::invalid_argument("model '" + program.name + "': the capture holds no acquired prologue and computation");
  register_jit_symbols();
  auto shape = std::make_shared<const ModuleShape>(read_prologue(*program.prologue));
  ModelFactory factory = [program, shape](const std::map<std::string, std::string>& params) {
    return build(program, shape, params);
  };
  acquire(factory({}));  // checks the program: every op traces again
  return factory;
}

}  // namespace tv::jit
