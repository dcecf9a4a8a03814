#include "jit/acquire.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>

#include "aten/convert.h"
#include "ops/ltorch.h"

namespace tv::jit {
namespace {

const std::vector<std::string> kPrologueImports = {"import thunder", "import thunder.core.prims as prims",
                                                   "import torch", "from thunder.executors.torchex import no_autocast"};
const std::vector<std::string> kComputationImports = {"import thunder", "import thunder.torch as ltorch", "import torch",
                                                      "from thunder.executors.torchex import no_autocast"};
const std::vector<std::string> kEpilogueImports = {"import torch", "from thunder.executors.torchex import no_autocast"};
const std::vector<std::string> kDecorators = {"@torch.no_grad()", "@no_autocast"};

// Registers `name` unless present; the registry upgrades an opaque symbol the parser made before.
void ensure_symbol(const std::string& name, PrintForm form, std::vector<std::string> traits) {
  auto& registry = SymbolRegistry::global();
  if (const Symbol* s = registry.find(name, form); s && !s->opaque) return;
  Symbol s;
  s.name = name;
  s.form = form;
  s.is_prim = true;
  s.impl = [](TraceBuilder&, const std::vector<Value>&, const Kwargs&) { return Value::none(); };
  s.traits = std::move(traits);
  registry.add(std::move(s));
}

const Symbol& sym(std::string_view name, PrintForm form = PrintForm::call) {
  return *SymbolRegistry::global().find(name, form);
}

BoundSymbol stmt(const Symbol& s, std::vector<Value> args, std::vector<ProxyPtr> outputs = {}) {
  BoundSymbol b;
  b.symbol = &s;
  b.args = std::move(args);
  b.outputs = std::move(outputs);
  return b;
}

ProxyPtr other_proxy(std::string name, std::string type_text) {
  auto p = std::make_shared<Proxy>();
  p->name = std::move(name);
  p->kind = ProxyKind::other;
  p->other_text = std::move(type_text);
  return p;
}

ProxyPtr tensor_proxy(const std::string& name, const TensorMeta& m, Distribution d = Distribution::none) {
  return make_tensor(name, m.shape, m.dtype, m.device, m.requires_grad, d);
}

// How ddp or fsdp laid the parameters out over the ranks (the attributes their transform_module
// set), as Thunder's ddp_type on parameter proxies.
Distribution parameter_distribution(const Module& m) {
  auto flag = [&](const char* name) {
    const AttrValue* v = m.find_attribute(name);
    return v && std::holds_alternative<bool>(*v) && std::get<bool>(*v);
  };
  if (flag("use_fsdp")) return Distribution::fully_sharded;
  if (flag("use_ddp")) return Distribution::replicated;
  return Distribution::none;
}

void emit_tensor_check(TraceBuilder& b, const ProxyPtr& p) {
  b.emit(stmt(sym("prims.check_tensor_shape_and_metadata"),
              {Value::of(p), Value::ints(p->shape), Value::string(p->device.str()), Value::of(p->dtype),
               Value::boolean(p->requires_grad)}));
}

// `i0: "bool True" = owner.name` and its check.
void emit_attribute(TraceBuilder& b, const ProxyPtr& owner, const std::string& name, const AttrValue& v, int& counter) {
  int k = counter++;
  ProxyPtr p;
  Value expected;
  const char* check = "prims.check_number_type_and_value";
  if (auto x = std::get_if<bool>(&v)) {
    p = make_number("i" + std::to_string(k), NumberType::boolean, *x ? 1.0 : 0.0);
    expected = Value::boolean(*x);
  } else if (auto x = std::get_if<int64_t>(&v)) {
    p = make_number("i" + std::to_string(k), NumberType::integer, static_cast<double>(*x));
    expected = Value::integer(*x);
  } else if (auto x = std::get_if<double>(&v)) {
    p = make_number("f" + std::to_string(k), NumberType::floating, *x);
    expected = Value::floating(*x);
  } else {
    p = make_proxy("s" + std::to_string(k), ProxyKind::string);
    expected = Value::string(std::get<std::string>(v));
    check = "prims.check_string_value";
  }
  b.reserve_name(p->name);
  b.emit(stmt(structural::unpack_attr(), {Value::of(owner), Value::string(name)}, {p}));
  b.emit(stmt(sym(check), {Value::of(p), expected}));
}

// Thunder's cache_info block: default dtype (torch's, now), device, autocast, aliases, grad mode, grad sync.
void emit_cache_info(TraceBuilder& b) {
  auto info = make_proxy("cache_info", ProxyKind::any);
  b.emit(stmt(sym("thunder._get_cache_info", PrintForm::annotated_call), {}, {info}));
  auto key = [&](const std::string& k, ProxyPtr p, const char* check, Value expected) {
    b.emit(stmt(structural::unpack_key(), {Value::of(info), Value::string(k)}, {p}));
    b.emit(stmt(sym(check), {Value::of(p), std::move(expected)}));
  };
  key("default_dtype", other_proxy("cache_info_default_dtype", "<class 'torch.dtype'>"), "prims.check_literal_like",
      Value::of(aten::default_dtype()));
  key("default_device", other_proxy("cache_info_default_device", "<class 'torch.device'>"),
      "prims.check_literal_like", Value::of(Device{}));
  key("is_autocast_enabled", make_number("cache_info_is_autocast_enabled", NumberType::boolean, 0.0),
      "prims.check_number_type_and_value", Value::boolean(false));
  key("alias_tensor_indices", make_proxy("cache_info_alias_tensor_indices", ProxyKind::string),
      "prims.check_string_value", Value::string(""));
  key("is_grad_enabled", make_number("cache_info_is_grad_enabled", NumberType::boolean, 1.0),
      "prims.check_number_type_and_value", Value::boolean(true));
  key("no_grad_sync", make_number("cache_info_no_grad_sync", NumberType::boolean, 0.0),
      "prims.check_number_type_and_value", Value::boolean(false));
}

struct ModuleTensor {
  const NamedTensor* source;
  bool buffer;
  ProxyPtr proxy;
};

std::string owner_of(const std::string& qualified) {
  auto dot = qualified.rfind('.');
  return dot == std::string::npos ? "" : qualified.substr(0, dot);
}

TracePtr build_prologue(const Module& m, const std::vector<ProxyPtr>& inputs, const std::vector<ModuleTensor>& tensors,
                        const std::vector<ProxyPtr>& sorted) {
  TraceBuilder b("prologue");
  b.trace().imports = kPrologueImports;
  b.trace().decorators = kDecorators;
  auto args = b.input(make_proxy("args", ProxyKind::any), ParamKind::varargs);
  b.emit(stmt(sym("prims.check_len"), {Value::of(args), Value::integer(static_cast<int64_t>(inputs.size()))}));
  auto kwargs = b.input(make_proxy("kwargs", ProxyKind::any), ParamKind::varkw);
  b.emit(stmt(sym("prims.check_len"), {Value::of(kwargs), Value::integer(0)}));

  for (size_t i = 0; i < inputs.size(); ++i) {
    b.reserve_name(inputs[i]->name);
    b.emit(stmt(structural::unpack_key(), {Value::of(args), Value::integer(static_cast<int64_t>(i))}, {inputs[i]}));
  }
  auto module0 = make_proxy("module0", ProxyKind::any);
  b.emit(stmt(structural::unpack_function_obj(), {Value::string("__function_obj")}, {module0}));
  auto module = make_proxy("module", ProxyKind::any);
  b.emit(stmt(sym("thunder.core.module.get_thunder_module", PrintForm::annotated_call), {Value::of(module0)}, {module}));
  for (const auto& t : tensors) {
    b.reserve_name(t.proxy->name);
    const Symbol& getter = t.buffer ? sym("get_buffer", PrintForm::method) : structural::get_parameter();
    b.emit(stmt(getter, {Value::of(module), Value::string(t.source->name)}, {t.proxy}));
  }
  for (const auto& p : inputs) emit_tensor_check(b, p);

  // Attributes grouped by owning submodule, the top level first; each group's tensors follow it.
  std::vector<std::string> groups = {""};
  for (const auto& [name, v] : m.attributes)
    if (std::find(groups.begin(), groups.end(), owner_of(name)) == groups.end()) groups.push_back(owner_of(name));
  auto group_of = [&](const std::string& qualified) {
    auto owner = owner_of(qualified);
    return std::find(groups.begin(), groups.end(), owner) == groups.end() ? std::string() : owner;
  };
  int counter = 0, submodules = 1;
  for (const auto& g : groups) {
    ProxyPtr owner = module;
    if (!g.empty()) {
      owner = make_proxy("m" + std::to_string(submodules++), ProxyKind::any);
      b.emit(stmt(sym("get_submodule", PrintForm::method), {Value::of(module), Value::string(g)}, {owner}));
    }
    for (const auto& [name, v] : m.attributes)
      if (owner_of(name) == g) emit_attribute(b, owner, name.substr(g.empty() ? 0 : g.size() + 1), v, counter);
    for (const auto& t : tensors)
      if (group_of(t.source->name) == g) emit_tensor_check(b, t.proxy);
  }
  emit_cache_info(b);

  std::vector<Value> flat;
  for (const auto& p : inputs) flat.push_back(Value::of(p));
  for (const auto& p : sorted) flat.push_back(Value::of(p));
  return b.finish(Value::tuple({Value::tuple(std::move(flat)), Value::tuple({})}));
}

}  // namespace

void register_jit_symbols() {
  static std::once_flag once;
  std::call_once(once, [] {
    ltorch::register_ops();
    for (const char* name : {"prims.check_len", "prims.check_tensor_shape_and_metadata",
                             "prims.check_number_type_and_value", "prims.check_string_value",
                             "prims.check_literal_like"})
      ensure_symbol(name, PrintForm::call, {"check"});
    ensure_symbol("thunder.core.module.get_thunder_module", PrintForm::annotated_call, {"structural"});
    ensure_symbol("thunder._get_cache_info", PrintForm::annotated_call, {"structural"});
    ensure_symbol("get_submodule", PrintForm::method, {"structural"});
    ensure_symbol("get_buffer", PrintForm::method, {"structural"});
  });
}

Acquired acquire(const Module& m, const std::vector<TensorMeta>& input_metas) {
  register_jit_symbols();
  if (!m.forward) throw std::invalid_argument("model '" + m.name + "' has no forward");
  if (input_metas.size() != m.inputs.size())
    throw std::invalid_argument("model '" + m.name + "' takes " + std::to_string(m.inputs.size()) + " inputs, got " +
                                std::to_string(input_metas.size()));

  // Proxies shared by the three traces.
  std::vector<ProxyPtr> inputs;
  std::map<std::string, ProxyPtr, std::less<>> input_map;
  for (size_t i = 0; i < input_metas.size(); ++i) {
    const auto& name = m.inputs[i].name;
    for (const char* reserved : {"args", "kwargs", "module", "module0", "cache_info"})
      if (name == reserved) throw std::invalid_argument("model input may not be named '" + name + "'");
    inputs.push_back(tensor_proxy(name, input_metas[i]));
    input_map[name] = inputs.back();
  }
  std::vector<ModuleTensor> tensors;
  std::map<std::string, ProxyPtr, std::less<>> tensor_map;
  Distribution distribution = parameter_distribution(m);
  for (bool buffer : {false, true})
    for (const auto& t : buffer ? m.buffers : m.parameters) {
      auto proxy = tensor_proxy(parameter_proxy_name(t.name), t.meta(), buffer ? Distribution::none : distribution);
      if (input_map.count(proxy->name)) throw std::invalid_argument("input and parameter share the name " + proxy->name);
      tensors.push_back({&t, buffer, proxy});
      tensor_map[t.name] = proxy;
    }
  std::vector<ProxyPtr> sorted;
  for (const auto& t : tensors) sorted.push_back(t.proxy);
  std::sort(sorted.begin(), sorted.end(), [](const ProxyPtr& a, const ProxyPtr& b) { return a->name < b->name; });

  Acquired out;
  out.prologue = build_prologue(m, inputs, tensors, sorted);

  TraceBuilder cb("computation");
  cb.trace().imports = kComputationImports;
  cb.trace().decorators = kDecorators;
  for (const auto& p : inputs) cb.input(p);
  for (const auto& p : sorted) cb.input(p);
  ForwardContext ctx(cb, m, input_map, tensor_map);
  std::vector<ProxyPtr> outputs = m.forward(ctx);
  std::vector<Value> returned;
  for (const auto& p : outputs) {
    if (!p) throw std::invalid_argument("model '" + m.name + "': forward returned a null proxy");
    returned.push_back(Value::of(p));
  }
  out.computation = cb.finish(Value::tuple(std::move(returned)));

  TraceBuilder eb("epilogue");
  eb.trace().imports = kEpilogueImports;
  eb.trace().decorators = kDecorators;
  std::vector<ProxyPtr> seen;
  for (const auto& p : outputs)
    if (std::find(seen.begin(), seen.end(), p) == seen.end()) {
      seen.push_back(p);
      eb.input(p);
    }
  if (outputs.size() == 1) {
    out.epilogue = eb.finish(Value::of(outputs[0]));
  } else {
    std::vector<Value> items;
    for (const auto& p : outputs) items.push_back(Value::of(p));
    out.epilogue = eb.finish(Value::tuple(std::move(items)));
  }
  return out;
}

Acquired acquire(const Module& m) { return acquire(m, m.input_metadata()); }

}  // namespace tv::jit
