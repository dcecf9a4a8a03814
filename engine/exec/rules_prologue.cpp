// Rules of the prologue: unpacking inputs (args[i]), the module (globals()['__function_obj'],
// get_thunder_module, get_submodule), its parameters and attributes, thunder._get_cache_info(),
// and the checks (prims.check_*; Thunder's short spellings check_len, check_tensor_metadata, ...).
// A failed check throws ExecError "input 'x': expected shape (2, 5), got (3, 5)".
#include "aten/convert.h"
#include "exec/exec_rules.h"
#include "exec/executor.h"
#include "runtime/rule_util.h"

namespace tv::exec::detail {

namespace {

using namespace rules;

// The rule of `name` printed in `form` (the symbol is the one acquisition defines, or the opaque one
// a parsed printout of Thunder's has).
void def(std::string_view name, PrintForm form, ExecRule fn) {
  set_exec_rule(SymbolRegistry::global().find_or_opaque(name, form), std::move(fn));
}
void def(std::string_view name, ExecRule fn) { def(name, PrintForm::call, std::move(fn)); }

// The name of the checked value: the proxy of the first argument.
std::string subject(const ExecContext& ctx) {
  if (!ctx.bsym.args.empty() && ctx.bsym.args[0].is_proxy()) return ctx.bsym.args[0].proxy->name;
  return "value";
}

[[noreturn]] void fail(const ExecContext& ctx, const std::string& what) {
  throw ExecError("input '" + subject(ctx) + "': " + what, ctx.bsym.name());
}

const ModuleView& view_of(const ExecContext& ctx, const RValue& m) {
  if (m.kind != RValue::Kind::module || !m.module)
    throw ExecError("expected a module, got " + describe(m) + " in " + ctx.bsym.name(), ctx.bsym.name());
  return *m.module;
}

std::string qualified(const RValue& module, const std::string& name) {
  return module.s.empty() ? name : module.s + "." + name;
}

RValue attr_value(const ModuleView::Attr& a) {
  if (auto* b = std::get_if<bool>(&a)) return RValue::boolean(*b);
  if (auto* i = std::get_if<int64_t>(&a)) return RValue::integer(*i);
  if (auto* d = std::get_if<double>(&a)) return RValue::floating(*d);
  return RValue::string(std::get<std::string>(a));
}

RValue to_run_device(const ExecContext& ctx, const at::Tensor& t) {
  c10::Device d = to_device(ctx.options.device);
  if (!ctx.options.move_inputs || t.device() == d) return RValue::of(t);
  at::Tensor moved = t.to(d).detach();
  if (t.requires_grad()) moved.requires_grad_(true);
  return RValue::of(moved);
}

bool same_literal(const RValue& a, const RValue& b) {
  if (a.is_number() && b.is_number()) return a.kind == b.kind && a.number() == b.number();
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case RValue::Kind::none: return true;
    case RValue::Kind::string:
    case RValue::Kind::name: return a.s == b.s;
    case RValue::Kind::dtype: return a.dtype == b.dtype;
    case RValue::Kind::device: return a.device == b.device;
    default: return false;
  }
}

size_t length_of(const ExecContext& ctx, const RValue& v) {
  if (v.is_sequence()) return v.items.size();
  if (v.kind == RValue::Kind::dict) return v.entries.size();
  if (v.kind == RValue::Kind::string) return v.s.size();
  fail(ctx, "expected a sequence, got " + describe(v));
}

RValue check_len(const ExecContext& ctx, Args a, Kw) {
  size_t n = length_of(ctx, rarg(a, 0, "x"));
  int64_t expected = int_at(a, 1, "length");
  if (static_cast<int64_t>(n) != expected)
    fail(ctx, "expected length " + std::to_string(expected) + ", got " + std::to_string(n));
  return RValue::none();
}

// Whether `shape` (a sequence of ints, or what RValue::ints reads) is `sizes`; no allocation for a
// sequence, since the prologue checks every parameter at every call.
bool same_sizes(const RValue& shape, at::IntArrayRef sizes) {
  if (!shape.is_sequence()) return at::IntArrayRef(shape.ints()) == sizes;
  if (shape.items.size() != sizes.size()) return false;
  for (size_t i = 0; i < sizes.size(); ++i)
    if (!shape.items[i].is_number() || shape.items[i].integer_value() != sizes[i]) return false;
  return true;
}

RValue check_tensor(const ExecContext& ctx, Args a, Kw) {
  const RValue& x = rarg(a, 0, "tensor");
  if (!x.is_tensor()) fail(ctx, "expected a tensor, got " + describe(x));
  const at::Tensor& t = x.t;
  if (const RValue& shape = rarg(a, 1, "shape"); !same_sizes(shape, t.sizes()))
    fail(ctx, "expected shape " + shape_str(shape.ints()) + ", got " + shape_str(t.sizes()));
  // Device: a string ('cuda:0') or a device; trace devices mean the run's device when mapped.
  const RValue& dv = rarg(a, 2, "device");
  Device expected;
  if (dv.kind == RValue::Kind::device) {
    expected = dv.device;
  } else if (dv.kind == RValue::Kind::string) {
    auto d = Device::parse(dv.s);
    if (!d) fail(ctx, "unknown device '" + dv.s + "' in the check");
    expected = ctx.options.map_devices ? ctx.options.device : *d;
  } else {
    fail(ctx, "expected a device in the check, got " + describe(dv));
  }
  Device actual = from_device(t.device());
  if (!(actual == expected))
    fail(ctx, "expected device '" + (dv.kind == RValue::Kind::device ? dv.device.str() : dv.s) + "', got '" +
                  actual.str() + "'");
  const RValue& dt = rarg(a, 3, "dtype");
  if (dt.kind == RValue::Kind::dtype) {
    DType got = from_scalar_type(t.scalar_type());
    if (got != dt.dtype)
      fail(ctx, "expected dtype " + std::string(torch_name(dt.dtype)) + ", got " + std::string(torch_name(got)));
  }
  if (a.size() > 4 && a[4].is_number()) {
    bool want = a[4].number() != 0;
    if (t.requires_grad() != want)
      fail(ctx, std::string("expected requires_grad=") + (want ? "True" : "False") + ", got " +
                    (t.requires_grad() ? "True" : "False"));
  }
  return RValue::none();
}

RValue check_number(const ExecContext& ctx, Args a, Kw) {
  const RValue& x = rarg(a, 0, "x");
  const RValue& want = rarg(a, 1, "value");
  if (!x.is_number() || x.kind != want.kind || x.number() != want.number())
    fail(ctx, "expected " + describe(want) + ", got " + describe(x));
  return RValue::none();
}

RValue check_string(const ExecContext& ctx, Args a, Kw) {
  const RValue& x = rarg(a, 0, "x");
  const RValue& want = rarg(a, 1, "value");
  if (x.kind != RValue::Kind::string || x.s != want.s) fail(ctx, "expected " + describe(want) + ", got " + describe(x));
  return RValue::none();
}

RValue check_literal(const ExecContext& ctx, Args a, Kw) {
  const RValue& x = rarg(a, 0, "x");
  const RValue& want = rarg(a, 1, "value");
  if (!same_literal(x, want)) fail(ctx, "expected " + python_text(want) + ", got " + python_text(x));
  return RValue::none();
}

}  // namespace

void register_prologue_rules() {
  // Acquisition's spellings (prims.check_*) and the short ones of Thunder's printouts.
  def("prims.check_len", check_len);
  def("check_len", check_len);
  def("prims.check_tensor_shape_and_metadata", check_tensor);
  def("check_tensor_metadata", check_tensor);
  def("check_tensor_shape_and_metadata", check_tensor);
  def("prims.check_number_type_and_value", check_number);
  def("check_number_type_and_value", check_number);
  def("prims.check_string_value", check_string);
  def("check_string_value", check_string);
  def("prims.check_literal_like", check_literal);
  def("check_literal_like", check_literal);

  // x = args[0], v = cache_info['key']
  set_exec_rule(structural::unpack_key(), [](const ExecContext& ctx, Args a, Kw) -> RValue {
    const RValue& obj = rarg(a, 0, "object");
    const RValue& key = rarg(a, 1, "key");
    // (names for the errors below; a prologue unpacks every input at every call)
    auto target = [&] { return ctx.bsym.output() ? ctx.bsym.output()->name : std::string("value"); };
    auto container = [&] {
      return !ctx.bsym.args.empty() && ctx.bsym.args[0].is_proxy() ? ctx.bsym.args[0].proxy->name : std::string("object");
    };
    if (obj.is_sequence() && key.is_number()) {
      int64_t k = key.integer_value(), n = static_cast<int64_t>(obj.items.size());
      if (k < -n || k >= n)
        throw ExecError("input '" + target() + "' (" + container() + "[" + std::to_string(k) + "]) is missing: " +
                            std::to_string(n) + " given",
                        ctx.bsym.name());
      return obj.items[static_cast<size_t>(k < 0 ? k + n : k)];
    }
    if (obj.kind == RValue::Kind::dict) {
      for (const auto& [k, v] : obj.entries)
        if (same_literal(k, key)) return v;
      throw ExecError("input '" + target() + "': " + container() + " has no key " + python_text(key), ctx.bsym.name());
    }
    throw ExecError("cannot subscript " + describe(obj) + " with " + describe(key), ctx.bsym.name());
  });
  // m.training, m.in_features
  set_exec_rule(structural::unpack_attr(), [](const ExecContext& ctx, Args a, Kw) -> RValue {
    const RValue& m = rarg(a, 0, "module");
    std::string name = qualified(m, rarg(a, 1, "name").s);
    auto v = view_of(ctx, m).attribute(name);
    if (!v) throw ExecError("module has no attribute '" + name + "'", ctx.bsym.name());
    return attr_value(*v);
  });
  set_exec_rule(structural::unpack_function_obj(), [](const ExecContext& ctx, Args, Kw) -> RValue {
    if (!ctx.options.module)
      throw ExecError("the prologue needs the module (globals()['__function_obj']): set ExecOptions::module",
                      ctx.bsym.name());
    return RValue::of_module(ctx.options.module);
  });
  def("thunder.core.module.get_thunder_module", PrintForm::annotated_call, [](const ExecContext& ctx, Args a, Kw) -> RValue {
    const RValue& m = rarg(a, 0, "module");
    view_of(ctx, m);
    return m;
  });
  def("get_submodule", PrintForm::method, [](const ExecContext& ctx, Args a, Kw) -> RValue {
    const RValue& m = rarg(a, 0, "module");
    return RValue::of_module(&view_of(ctx, m), qualified(m, rarg(a, 1, "name").s));
  });
  ExecRule get_parameter = [](const ExecContext& ctx, Args a, Kw) -> RValue {
    const RValue& m = rarg(a, 0, "module");
    const std::string& own = rarg(a, 1, "name").s;  // (the module's own name: no copy at every call)
    const ModuleView& view = view_of(ctx, m);
    auto t = m.s.empty() ? view.parameter(own) : view.parameter(qualified(m, own));
    if (!t || !t->defined())
      throw ExecError("module has no parameter or buffer '" + qualified(m, own) + "'", ctx.bsym.name());
    return to_run_device(ctx, *t);
  };
  set_exec_rule(structural::get_parameter(), get_parameter);
  def("get_buffer", PrintForm::method, get_parameter);
  def("thunder._get_cache_info", PrintForm::annotated_call, [](const ExecContext& ctx, Args, Kw) -> RValue {
    std::vector<std::pair<std::string, RValue>> info = {
        {"default_dtype", RValue::of(aten::default_dtype())},
        {"default_device", RValue::of(ctx.options.map_devices ? ctx.options.device : Device{})},
        {"is_autocast_enabled", RValue::boolean(false)},
        {"alias_tensor_indices", RValue::string("")},
        {"is_grad_enabled", RValue::boolean(true)},
        {"no_grad_sync", RValue::boolean(false)},
    };
    for (const auto& [k, v] : ctx.options.cache_info) {
      bool found = false;
      for (auto& [ik, iv] : info)
        if (ik == k) iv = v, found = true;
      if (!found) info.emplace_back(k, v);
    }
    std::vector<std::pair<RValue, RValue>> entries;
    for (auto& [k, v] : info) entries.emplace_back(RValue::string(k), std::move(v));
    return RValue::dict(std::move(entries));
  });
}

}  // namespace tv::exec::detail
