#include "ops/aten_fallback.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/GradMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/autograd.h>

#include <algorithm>
#include <mutex>

#include "aten/convert.h"
#include "ops/grad_rules.h"
#include "ops/ltorch.h"
#include "ops/op_utils.h"
#include "runtime/rule_util.h"

namespace tv::ops {

namespace {

using Args = const std::vector<Value>&;
using Kw = const Kwargs&;

// "torch.ops.aten.convolution.default" -> {"aten::convolution", ""}; "torch.ops.torchvision.nms.default"
// -> {"torchvision::nms", ""}.
c10::OperatorName operator_name(std::string_view symbol_name) {
  std::string_view rest = symbol_name.substr(kFallbackPrefix.size());
  size_t first = rest.find('.'), last = rest.rfind('.');
  if (first == std::string_view::npos || first == 0 || last == first || last + 1 == rest.size() || last == first + 1)
    throw OpError("'" + std::string(symbol_name) +
                  "' does not name an operator overload (torch.ops.<namespace>.<name>.<overload>)");
  std::string overload(rest.substr(last + 1));
  return {std::string(rest.substr(0, first)) + "::" + std::string(rest.substr(first + 1, last - first - 1)),
          overload == "default" ? "" : overload};
}

// The tensors of a call, made for a run that only wants the outputs' metadata: on the meta device,
// or on the CPU where ATen has no meta kernel for the operator, floating ones filled with ones (a
// valid probability, scale or divisor: multinomial refuses zeros) and the others with zeros (a valid
// index).
struct MetaRun {
  bool on_meta = true;
  std::optional<Device> device;  // of the first tensor argument, else of a device argument
  // The tensors that require grad are made so: LibTorch's autograd then says which outputs do (not
  // randint_like's, nor empty_like's, whatever their inputs).
  bool probe = false;

  c10::IValue operator()(const Value& v) {
    switch (v.kind) {
      case Value::Kind::none: return {};
      case Value::Kind::boolean: return v.b;
      case Value::Kind::integer: return v.i;
      case Value::Kind::floating: return v.f;
      case Value::Kind::string: return v.s.str();
      case Value::Kind::dtype: return aten::to_scalar_type(v.dtype);
      case Value::Kind::device:
        if (!device) device = v.device;
        return on_meta ? c10::Device(c10::kMeta) : c10::Device(c10::kCPU);
      case Value::Kind::proxy: return tensor(*v.proxy);
      case Value::Kind::name:
        if (auto e = fallback_enum(v.s)) return *e;
        throw OpError("an ATen operator cannot take '" + v.s + "'");
      case Value::Kind::tuple:
      case Value::Kind::list: return sequence(v.items);
      case Value::Kind::dict: break;
    }
    throw OpError("an ATen operator cannot take a dict argument");
  }

  c10::IValue tensor(const Proxy& p) {
    if (p.kind == ProxyKind::number && p.number_value) {
      if (p.number_type == NumberType::floating) return *p.number_value;
      return static_cast<int64_t>(*p.number_value);
    }
    if (!p.is_tensor()) throw OpError("an ATen operator cannot take " + p.name + " (" + type_text(p) + ")");
    if (!device) device = p.device;
    auto options = at::TensorOptions().dtype(aten::to_scalar_type(p.dtype)).device(on_meta ? c10::kMeta : c10::kCPU);
    at::Tensor t = on_meta ? at::empty(p.shape, options)
                   : is_floating(p.dtype) ? at::ones(p.shape, options) : at::zeros(p.shape, options);
    if (probe && p.requires_grad && is_floating(p.dtype)) t.requires_grad_(true);
    return t;
  }

  c10::IValue sequence(const std::vector<Value>& items) {
    std::vector<c10::IValue> converted;
    for (const auto& v : items) converted.push_back((*this)(v));
    return fallback_list(converted);
  }
};

// The value of an operator's output as proxies of `device` (numbers stay numbers).
// `probed`: the run marked its inputs that require grad (MetaRun::probe), so a tensor output
// requires grad as LibTorch's autograd made it.
Value output_value(TraceBuilder& b, const c10::IValue& v, Device device, bool requires_grad, bool probed) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    auto dtype = aten::dtype_of(t.scalar_type());
    if (!dtype) throw OpError(std::string("an output of dtype ") + c10::toString(t.scalar_type()) + " the engine does not know");
    bool grad = requires_grad && is_floating(*dtype) && (!probed || t.requires_grad());
    return Value::of(b.tensor(t.sizes().vec(), *dtype, device, grad));
  }
  if (v.isTensorList() || v.isTuple() || v.isList()) {
    std::vector<Value> items;
    if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorVector()) items.push_back(output_value(b, t, device, requires_grad, probed));
    } else if (v.isTuple()) {
      for (const auto& e : v.toTupleRef().elements()) items.push_back(output_value(b, e, device, requires_grad, probed));
    } else {
      for (const auto& e : v.toListRef()) items.push_back(output_value(b, e, device, requires_grad, probed));
    }
    return Value::tuple(std::move(items));
  }
  if (v.isNone()) return Value::none();
  if (v.isBool()) return Value::boolean(v.toBool());
  if (v.isInt()) return Value::integer(v.toInt());
  if (v.isDouble()) return Value::floating(v.toDouble());
  throw OpError("an output of kind " + v.tagKind() + " the engine does not know");
}

std::string first_line(const char* what) {
  std::string s(what);
  return s.substr(0, s.find('\n'));
}

// An operator that writes into an argument may write into the function's inputs only (a module's
// buffer, the caller's tensor: eager torch writes there too). Written into an intermediate, it would
// change a value that the trace, which is functional, may read again (a saved-for-backward value).
void require_written_inputs(TraceBuilder& b, const c10::FunctionSchema& schema, Args args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (!fallback_writes(schema, i) || !args[i].is_proxy()) continue;
    const auto& params = b.trace().params;
    bool input = std::any_of(params.begin(), params.end(), [&](const Param& p) { return p.proxy == args[i].proxy; });
    if (!input)
      throw OpError(schema.name() + " writes into " + args[i].proxy->name + ", a value computed in the trace; " +
                    "traces are functional: call its out-of-place twin (" + schema.name().substr(6) + " without '_')");
  }
}

// A factory: an operator taking TensorOptions that reads no tensor's values (randint_like, zeros_like,
// arange; not _to_copy, which converts one): torch's Python functions give its tensors
// requires_grad=False unless asked, and it has no gradient.
bool is_factory(const c10::FunctionSchema& schema) {
  const auto& params = schema.arguments();
  if (std::none_of(params.begin(), params.end(), [](const c10::Argument& a) { return a.name() == "pin_memory"; }))
    return false;
  const std::string& name = schema.name();
  bool like = name.size() > 5 && name.compare(name.size() - 5, 5, "_like") == 0;
  return like || std::none_of(params.begin(), params.end(), [](const c10::Argument& a) {
           return a.type()->kind() == c10::TypeKind::TensorType;
         });
}

// Whether LibTorch's autograd records here (grad mode on, not below it): only then does a probed
// run say which outputs require grad.
bool autograd_records() {
  at::Tensor t = at::empty({1}, at::TensorOptions().device(c10::kMeta)).requires_grad_(true);
  return t.mul(2).requires_grad();
}

// The meta function of a fallback symbol.
SymbolImpl fallback_meta(std::string symbol_name) {
  return [symbol_name](TraceBuilder& b, Args args, Kw kwargs) -> Value {
    c10::OperatorHandle op = fallback_operator(symbol_name);
    require_written_inputs(b, op.schema(), args);
    const bool requires_grad = !is_factory(op.schema()) && any_requires_grad(args);
    auto run = [&](bool on_meta, bool probe) {
      MetaRun convert{on_meta, std::nullopt, probe};
      std::vector<c10::IValue> positional;
      for (const auto& a : args) positional.push_back(convert(a));
      std::vector<std::pair<std::string, c10::IValue>> keywords;
      for (const auto& [k, v] : kwargs) keywords.emplace_back(k, convert(v));
      auto stack = fallback_stack(op.schema(), std::move(positional), std::move(keywords));
      op.callBoxed(stack);
      std::vector<Value> outs;
      for (const auto& v : stack) outs.push_back(output_value(b, v, convert.device.value_or(Device{}), requires_grad, probe));
      return outs.size() == 1 ? outs[0] : Value::tuple(std::move(outs));
    };
    const bool probe = requires_grad && autograd_records();
    auto attempt = [&](bool on_meta) {
      if (probe) {
        try {
          return run(on_meta, true);
        } catch (const OpError&) {
          throw;
        } catch (const std::exception&) {
          // autograd refused the marked inputs (a leaf written in place): the plain run decides
        }
      }
      return run(on_meta, false);
    };
    try {
      return attempt(true);
    } catch (const OpError&) {
      throw;
    } catch (const std::exception&) {
      // No meta kernel, or one that fails where the CPU kernel does not (a Python meta registration
      // of torch's that cannot take the arguments): CPU tensors instead.
    }
    try {
      return attempt(false);
    } catch (const c10::Error& e) {
      throw OpError(first_line(e.what_without_backtrace()));
    }
  };
}

// The gradient of a fallback symbol: one ltorch.fallback_vjp, its outputs the grads of the positional
// arguments that want one (floating tensors that require grad and that the operator does not write into).
std::vector<Value> fallback_grad(TraceBuilder& b, const BoundSymbol& f, const std::vector<Value>& cotangents) {
  const c10::FunctionSchema& schema = fallback_operator(f.name()).schema();
  if (is_factory(schema)) return std::vector<Value>(f.args.size(), Value::none());
  std::vector<std::pair<Value, Value>> keywords;
  for (const auto& [k, v] : f.kwargs) keywords.emplace_back(Value::string(k), v);
  auto wanted = [](const Value& a) {
    return a.is_proxy() && a.proxy->is_tensor() && is_floating(a.proxy->dtype) && a.proxy->requires_grad;
  };
  std::vector<Value> wants;  // a bool per argument; a tuple of them for a list of tensors (stack, cat)
  for (size_t i = 0; i < f.args.size(); ++i) {
    const Value& a = f.args[i];
    bool differentiable = fallback_differentiable(schema, i);
    if (a.is_sequence() && std::any_of(a.items.begin(), a.items.end(), [](const Value& v) { return v.is_proxy(); })) {
      std::vector<Value> each;
      for (const auto& v : a.items) each.push_back(Value::boolean(differentiable && wanted(v)));
      wants.push_back(Value::tuple(std::move(each)));
    } else {
      wants.push_back(Value::boolean(differentiable && wanted(a)));
    }
  }
  Value grads = b.call(kFallbackVjp, {Value::string(f.name()), Value::tuple(f.args), Value::dict(std::move(keywords)),
                                      Value::tuple(cotangents), Value::tuple(std::move(wants))});
  return grads.items;
}

// fallback_vjp(name, args, kwargs, cotangents, wants): a grad like each argument that wants one, None
// for the others; a list of them for a list of tensors.
Value fallback_vjp_meta(TraceBuilder& b, Args args, Kw) {
  const Value& name = arg(args, 0, "name");
  const Value& forward_args = arg(args, 1, "args");
  const Value& wants = arg(args, 4, "wants");
  if (name.kind != Value::Kind::string || !is_fallback_name(name.s) || !forward_args.is_sequence() ||
      !wants.is_sequence() || wants.items.size() != forward_args.items.size())
    throw OpError("fallback_vjp takes an ATen operator's name, its arguments, keywords, cotangents and which arguments want a grad");
  auto grad_like = [&](const Value& a, const Value& want) {
    bool yes = want.kind == Value::Kind::boolean && want.b && a.is_proxy() && a.proxy->is_tensor();
    return yes ? Value::of(b.tensor(a.proxy->shape, a.proxy->dtype, a.proxy->device)) : Value::none();
  };
  std::vector<Value> grads;
  for (size_t i = 0; i < forward_args.items.size(); ++i) {
    const Value& a = forward_args.items[i];
    const Value& want = wants.items[i];
    if (want.is_sequence() && a.is_sequence() && want.items.size() == a.items.size()) {
      std::vector<Value> each;
      for (size_t k = 0; k < a.items.size(); ++k) each.push_back(grad_like(a.items[k], want.items[k]));
      grads.push_back(Value::list(std::move(each)));
    } else {
      grads.push_back(grad_like(a, want));
    }
  }
  return Value::tuple(std::move(grads));
}

// A Python number where the operator takes a Tensor (`x.add_(1)`): a 0-dim tensor marked as a
// wrapped number, so that type promotion treats it as the number it was.
c10::IValue wrapped_number(const c10::IValue& v) {
  at::Tensor t = v.isBool() ? at::scalar_tensor(v.toBool(), at::kBool)
                 : v.isInt() ? at::scalar_tensor(v.toInt(), at::kLong)
                             : at::scalar_tensor(v.toDouble(), at::kDouble);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

}  // namespace

bool fallback_writes(const c10::FunctionSchema& schema, size_t i) {
  const auto& params = schema.arguments();
  return i < params.size() && params[i].alias_info() && params[i].alias_info()->isWrite();
}

bool fallback_differentiable(const c10::FunctionSchema& schema, size_t i) {
  if (!fallback_writes(schema, i)) return true;
  // Written and returned (an in-place op's self: out = f(self)) is differentiable; written and not
  // returned (a running statistic) is not.
  const auto& written = schema.arguments()[i].alias_info()->beforeSets();
  return std::any_of(schema.returns().begin(), schema.returns().end(), [&](const c10::Argument& r) {
    return r.alias_info() && r.alias_info()->beforeSets() == written;
  });
}

bool is_fallback_name(std::string_view symbol_name) {
  if (symbol_name.size() <= kFallbackPrefix.size() || symbol_name.substr(0, kFallbackPrefix.size()) != kFallbackPrefix)
    return false;
  std::string_view rest = symbol_name.substr(kFallbackPrefix.size());
  return std::count(rest.begin(), rest.end(), '.') >= 2;  // <namespace>.<name>.<overload>
}

c10::OperatorHandle fallback_operator(std::string_view symbol_name) {
  c10::OperatorName name = operator_name(symbol_name);
  auto op = c10::Dispatcher::singleton().findSchema(name);
  if (!op)
    throw OpError("'" + std::string(symbol_name) + "' is no operator of this process's dispatcher (no " + name.name +
                  (name.overload_name.empty() ? "" : "." + name.overload_name) +
                  "; an operator of a library such as torchvision needs that library loaded)");
  return *op;
}

}  // namespace tv::ops

// ---- Execution rules ----
// Execution of ATen fallbacks (ops/aten_fallback.h): `torch.ops.aten.<name>.<overload>` calls the
// operator through the dispatcher, with the run's tensors; `ltorch.fallback_vjp` recomputes the
// operator under LibTorch's autograd (the executor otherwise runs below it) and returns the
// gradients of the arguments that want one for the cotangents given. Every other tensor argument is
// cloned for the recomputation, so that an operator writing into one (a running statistic, even
// where its schema does not say so) leaves it as the forward did.
// The operator's tensor outputs, flattened in order (numbers are metadata the trace already has).
// LibTorch's autograd on, inside an executor that runs below it (AutoDispatchBelowADInplaceOrView).

namespace tv::exec {

namespace {

using namespace ops;

c10::IValue to_ivalue(const RValue& v) {
  switch (v.kind) {
    case RValue::Kind::none: return {};
    case RValue::Kind::boolean: return v.b;
    case RValue::Kind::integer: return v.i;
    case RValue::Kind::floating: return v.f;
    case RValue::Kind::string: return v.s;
    case RValue::Kind::dtype: return aten::to_scalar_type(v.dtype);
    case RValue::Kind::device: return aten::to_device(v.device);
    case RValue::Kind::tensor: return v.t;
    case RValue::Kind::name:
      if (auto e = fallback_enum(v.s)) return *e;
      break;
    case RValue::Kind::tuple:
    case RValue::Kind::list: {
      std::vector<c10::IValue> items;
      for (const auto& x : v.items) items.push_back(to_ivalue(x));
      return fallback_list(items);
    }
    default: break;
  }
  throw ExecError("an ATen operator cannot take this argument", "");
}

// The operator's tensor outputs, flattened in order (numbers are metadata the trace already has).
void tensors_of(const c10::IValue& v, std::vector<RValue>& out) {
  if (v.isTensor()) {
    out.push_back(RValue::of(v.toTensor()));
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector()) out.push_back(RValue::of(t));
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) tensors_of(e, out);
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) tensors_of(e, out);
  }
}

RValue result(std::vector<RValue> outs) { return outs.size() == 1 ? std::move(outs[0]) : RValue::tuple(std::move(outs)); }

std::vector<c10::IValue> call(const c10::OperatorHandle& op, const std::vector<RValue>& args, const RKwargs& kwargs) {
  std::vector<c10::IValue> positional;
  for (const auto& a : args) positional.push_back(to_ivalue(a));
  std::vector<std::pair<std::string, c10::IValue>> keywords;
  for (const auto& [k, v] : kwargs) keywords.emplace_back(k, to_ivalue(v));
  auto stack = fallback_stack(op.schema(), std::move(positional), std::move(keywords));
  op.callBoxed(stack);
  return stack;
}

// LibTorch's autograd on, inside an executor that runs below it (AutoDispatchBelowADInplaceOrView).
class AutogradOn {
 public:
  AutogradOn() : saved_(c10::impl::tls_local_dispatch_key_set()) {
    c10::impl::LocalDispatchKeySet on = saved_;
    on.excluded_ = on.excluded_ - c10::autograd_dispatch_keyset_with_ADInplaceOrView;
    c10::impl::_force_tls_local_dispatch_key_set(on);
  }
  ~AutogradOn() { c10::impl::_force_tls_local_dispatch_key_set(saved_); }
  AutogradOn(const AutogradOn&) = delete;
  AutogradOn& operator=(const AutogradOn&) = delete;

 private:
  c10::impl::LocalDispatchKeySet saved_;
  c10::AutoGradMode grad_{true};
};

RValue vjp(const std::vector<RValue>& a, const RKwargs&) {
  const std::string& name = rarg(a, 0, "name").s;
  c10::OperatorHandle op = fallback_operator(name);
  std::vector<RValue> args = rarg(a, 1, "args").items;
  RKwargs kwargs;
  for (const auto& [k, v] : rarg(a, 2, "kwargs").entries) kwargs.emplace_back(k.s, v);
  const auto& cotangents = rarg(a, 3, "cotangents").items;
  const auto& wants = rarg(a, 4, "wants").items;

  // In a run that records autograd itself (a backward with create_graph=True), the arguments stay
  // in its graph and the gradients are made with their own graph, differentiable in turn.
  const bool recorded_run = at::GradMode::is_enabled() &&
                              !c10::impl::tls_is_dispatch_keyset_excluded(c10::autograd_dispatch_keyset);
  AutogradOn autograd;
  std::vector<at::Tensor> leaves;  // in the order of the arguments (a list's tensors in order), as the meta's grads
  // Arguments LibTorch's autograd says the operator is not differentiable in (soft_margin_loss's
  // target, detached where the trace still marks it): their grads are zeros.
  std::vector<std::string> not_differentiable;
  auto prepare = [&](RValue& arg, const RValue* want, bool writes, bool differentiable) {
    if (!arg.is_tensor()) return;
    if (want && want->kind == RValue::Kind::boolean && want->b) {
      // (in a recorded run a copy in the graph: the variable of this argument alone, where another
      // argument is computed from it or is the same tensor, yet differentiable in the outer graph)
      leaves.push_back(recorded_run && arg.t.requires_grad() ? arg.t.clone() : arg.t.detach().requires_grad_(true));
      // An in-place op's self: a copy of the leaf, which autograd lets it write into.
      if (differentiable) {
        arg = RValue::of(writes ? leaves.back().clone() : leaves.back());
        return;
      }
    }
    arg = RValue::of(arg.t.clone());  // the recomputation may write into it (a running statistic) as the forward did
  };
  std::vector<RValue> outs;
  for (;;) {
    leaves.clear();
    std::vector<RValue> prepared = args;
    const auto& params = op.schema().arguments();
    for (size_t i = 0; i < prepared.size(); ++i) {
      const RValue* want = i < wants.size() ? &wants[i] : nullptr;
      bool writes = fallback_writes(op.schema(), i);
      bool differentiable = i >= params.size() || std::find(not_differentiable.begin(), not_differentiable.end(),
                                                            params[i].name()) == not_differentiable.end();
      if (prepared[i].kind == RValue::Kind::list || prepared[i].kind == RValue::Kind::tuple) {
        for (size_t k = 0; k < prepared[i].items.size(); ++k)
          prepare(prepared[i].items[k], want && k < want->items.size() ? &want->items[k] : nullptr, writes, differentiable);
      } else {
        prepare(prepared[i], want, writes, differentiable);
      }
    }
    try {
      for (const auto& v : call(op, prepared, kwargs)) tensors_of(v, outs);
      break;
    } catch (const c10::Error& e) {
      static const std::string marker = "is not differentiable with respect to argument '";
      std::string what = e.what_without_backtrace();
      auto at = what.find(marker);
      if (at == std::string::npos) throw;
      std::string argument = what.substr(at + marker.size(), what.find('\'', at + marker.size()) - at - marker.size());
      if (std::find(not_differentiable.begin(), not_differentiable.end(), argument) != not_differentiable.end()) throw;
      not_differentiable.push_back(argument);
    }
  }
  // (the cotangents as grad_outputs, not a sum of products with them: in a recorded run the
  // products would also differentiate through the cotangents, which depend on the same arguments;
  // under vmap, jacobian(vectorize=True), they are batched)
  std::vector<at::Tensor> differentiated, given;
  for (size_t i = 0; i < outs.size() && i < cotangents.size(); ++i)
    if (cotangents[i].is_tensor() && outs[i].t.requires_grad()) {
      const at::Tensor &out = outs[i].t, &c = cotangents[i].t;
      differentiated.push_back(out);
      at::Tensor g = c.scalar_type() == out.scalar_type() ? c : c.to(out.scalar_type());
      given.push_back(g.sizes() == out.sizes() ? g : g.expand_as(out));
    }
  std::vector<at::Tensor> gs(leaves.size());
  if (!differentiated.empty() && !leaves.empty())
    gs = torch::autograd::grad(differentiated, leaves, given, /*retain_graph=*/recorded_run, /*create_graph=*/recorded_run,
                               /*allow_unused=*/true);
  std::vector<RValue> grads;
  for (size_t i = 0; i < leaves.size(); ++i)
    grads.push_back(RValue::of(gs[i].defined() ? gs[i] : at::zeros_like(leaves[i])));
  return result(std::move(grads));
}

// The rule of an operator's symbol: the operator through the dispatcher.
ExecRule operator_rule(c10::OperatorHandle op) {
  return [op](const ExecContext&, const std::vector<RValue>& a, const RKwargs& k) {
    // Grad mode on (still below autograd: nothing is recorded), as in the eager training step the
    // recording ran: some operators choose their kernel by it, and LibTorch 2.6's CPU LSTM gives
    // other numbers without it.
    c10::AutoGradMode grad_mode(true);
    std::vector<RValue> outs;
    for (const auto& v : call(op, a, k)) tensors_of(v, outs);
    return result(std::move(outs));
  };
}

}  // namespace

}  // namespace tv::exec

namespace tv::ops {

namespace {

// Whether an operator draws from a random generator: it takes one (bernoulli, normal_, multinomial,
// an overload of rand), or draws from the default one without taking it (rand, randn_like, randint,
// randperm; native_dropout).
bool draws_random_numbers(const c10::FunctionSchema& schema) {
  bool dropout = false, train = false;  // (aten::lstm's dropout between layers, when training)
  for (const auto& a : schema.arguments()) {
    if (a.type()->str().find("Generator") != std::string::npos) return true;
    dropout = dropout || a.name() == "dropout";
    train = train || a.name() == "train";
  }
  if (dropout && train) return true;
  std::string_view name = schema.name();
  if (name.substr(0, 6) == "aten::") name.remove_prefix(6);
  return name.substr(0, 4) == "rand" || name.find("dropout") != std::string_view::npos;
}

}  // namespace

const Symbol& fallback_symbol(std::string_view symbol_name) {
  static std::once_flag vjp_once;
  std::call_once(vjp_once, [] {
    ltorch::register_ops();
    const Symbol& vjp = define(std::string(kFallbackVjp), true, {"fallback"}, fallback_vjp_meta);
    exec::set_exec_rule(vjp, exec::SimpleExecRule(exec::vjp));
    register_grad_rule(vjp, [](TraceBuilder&, const BoundSymbol& f, const std::vector<Value>&)
                                                      -> std::vector<Value> {
      throw OpError("the gradient of " + python_text(f.args.at(0)) +
                    "'s gradient (a second derivative of an ATen fallback) is not supported");
    });
  });
  const Symbol* s = SymbolRegistry::global().find(symbol_name);
  if (s && !s->opaque) return *s;
  c10::OperatorHandle op = fallback_operator(symbol_name);  // an OpError naming it when ATen has none
  std::vector<std::string> traits = {"fallback"};
  if (op.schema().is_mutable()) traits.push_back("effect");  // writes into an argument: never dropped nor merged
  if (draws_random_numbers(op.schema())) traits.push_back("random");  // two same calls draw twice: never merged
  const Symbol& symbol = define(std::string(symbol_name), true, std::move(traits), fallback_meta(std::string(symbol_name)));
  register_grad_rule(symbol, fallback_grad);
  exec::set_exec_rule(symbol, exec::operator_rule(op));
  return symbol;
}

std::vector<c10::IValue> fallback_stack(const c10::FunctionSchema& schema, std::vector<c10::IValue> positional,
                                        std::vector<std::pair<std::string, c10::IValue>> keywords) {
  const auto& params = schema.arguments();
  if (positional.size() > params.size())
    throw OpError(schema.name() + " takes " + std::to_string(params.size()) + " arguments, got " +
                  std::to_string(positional.size()));
  std::vector<std::optional<c10::IValue>> slots(params.size());
  for (size_t i = 0; i < positional.size(); ++i) slots[i] = std::move(positional[i]);
  for (auto& [k, v] : keywords) {
    auto it = std::find_if(params.begin(), params.end(), [&](const c10::Argument& a) { return a.name() == k; });
    if (it == params.end()) throw OpError(schema.name() + " has no argument '" + k + "'");
    slots[it - params.begin()] = std::move(v);
  }
  std::vector<c10::IValue> stack;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!slots[i]) {
      if (!params[i].default_value())
        throw OpError(schema.name() + " needs its argument '" + params[i].name() + "'");
      slots[i] = *params[i].default_value();
    }
    c10::IValue v = std::move(*slots[i]);
    c10::TypeKind kind = params[i].type()->kind();
    if (v.isInt() && kind == c10::TypeKind::FloatType) v = static_cast<double>(v.toInt());
    if ((v.isInt() || v.isDouble() || v.isBool()) && kind == c10::TypeKind::TensorType) v = wrapped_number(v);
    if (v.isInt() && kind == c10::TypeKind::ListType)  // int[2] given one int, as torch's Python binding takes it
      v = std::vector<int64_t>(params[i].N().value_or(1), v.toInt());
    stack.push_back(std::move(v));
  }
  return stack;
}

c10::IValue fallback_list(const std::vector<c10::IValue>& items) {
  auto all = [&](auto is) { return std::all_of(items.begin(), items.end(), is); };
  if (all([](const c10::IValue& v) { return v.isInt(); })) {  // empty too
    std::vector<int64_t> out;
    for (const auto& v : items) out.push_back(v.toInt());
    return out;
  }
  if (all([](const c10::IValue& v) { return v.isBool(); })) {
    c10::List<bool> out;
    for (const auto& v : items) out.push_back(v.toBool());
    return out;
  }
  if (all([](const c10::IValue& v) { return v.isInt() || v.isDouble() || v.isBool(); })) {
    std::vector<double> out;
    for (const auto& v : items) out.push_back(v.isDouble() ? v.toDouble() : v.isInt() ? v.toInt() : v.toBool());
    return out;
  }
  if (all([](const c10::IValue& v) { return v.isTensor(); })) {
    std::vector<at::Tensor> out;
    for (const auto& v : items) out.push_back(v.toTensor());
    return out;
  }
  if (!all([](const c10::IValue& v) { return v.isTensor() || v.isNone(); }))
    throw OpError("an ATen operator cannot take a sequence that mixes tensors with other values");
  c10::List<c10::optional<at::Tensor>> out;  // Tensor?[] (index)
  for (const auto& v : items) out.push_back(v.isNone() ? c10::optional<at::Tensor>() : v.toTensor());
  return out;
}

std::optional<c10::IValue> fallback_enum(std::string_view spelling) {
  if (spelling == "torch.strided") return c10::IValue(c10::Layout::Strided);
  if (spelling == "torch.sparse_coo") return c10::IValue(c10::Layout::Sparse);
  if (spelling == "torch.contiguous_format") return c10::IValue(c10::MemoryFormat::Contiguous);
  if (spelling == "torch.channels_last") return c10::IValue(c10::MemoryFormat::ChannelsLast);
  if (spelling == "torch.channels_last_3d") return c10::IValue(c10::MemoryFormat::ChannelsLast3d);
  if (spelling == "torch.preserve_format") return c10::IValue(c10::MemoryFormat::Preserve);
  return std::nullopt;
}

}  // namespace tv::ops
