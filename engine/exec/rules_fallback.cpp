// Execution of ATen fallbacks (ops/aten_fallback.h): `torch.ops.aten.<name>.<overload>` calls the
// operator through the dispatcher, with the run's tensors; `ltorch.fallback_vjp` recomputes the
// operator under LibTorch's autograd (the executor otherwise runs below it) and returns the
// gradients of the arguments that want one for the cotangents given. Every other tensor argument is
// cloned for the recomputation, so that an operator writing into one (a running statistic, even
// where its schema does not say so) leaves it as the forward did.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include "aten/convert.h"
#include "exec/rule_util.h"
#include "exec/rules.h"
#include "ir/builder.h"
#include "ops/aten_fallback.h"

namespace tv::exec::detail {

namespace {

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
      if (auto e = ops::fallback_enum(v.s)) return *e;
      break;
    case RValue::Kind::tuple:
    case RValue::Kind::list: {
      std::vector<c10::IValue> items;
      for (const auto& x : v.items) items.push_back(to_ivalue(x));
      return ops::fallback_list(items);
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
  auto stack = ops::fallback_stack(op.schema(), std::move(positional), std::move(keywords));
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
  c10::OperatorHandle op = ops::fallback_operator(name);
  std::vector<RValue> args = rarg(a, 1, "args").items;
  RKwargs kwargs;
  for (const auto& [k, v] : rarg(a, 2, "kwargs").entries) kwargs.emplace_back(k.s, v);
  const auto& cotangents = rarg(a, 3, "cotangents").items;
  const auto& wants = rarg(a, 4, "wants").items;

  AutogradOn autograd;
  std::vector<at::Tensor> leaves;  // in the order of the arguments (a list's tensors in order), as the meta's grads
  auto prepare = [&](RValue& arg, const RValue* want, bool writes) {
    if (!arg.is_tensor()) return;
    if (want && want->kind == RValue::Kind::boolean && want->b) {
      leaves.push_back(arg.t.detach().requires_grad_(true));
      // An in-place op's self: a copy of the leaf, which autograd lets it write into.
      arg = RValue::of(writes ? leaves.back().clone() : leaves.back());
    } else {  // a clone: the recomputation may write into it (a running statistic) as the forward did
      arg = RValue::of(arg.t.clone());
    }
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const RValue* want = i < wants.size() ? &wants[i] : nullptr;
    bool writes = ops::fallback_writes(op.schema(), i);
    if (args[i].kind == RValue::Kind::list || args[i].kind == RValue::Kind::tuple) {
      for (size_t k = 0; k < args[i].items.size(); ++k)
        prepare(args[i].items[k], want && k < want->items.size() ? &want->items[k] : nullptr, writes);
    } else {
      prepare(args[i], want, writes);
    }
  }
  std::vector<RValue> outs;
  for (const auto& v : call(op, args, kwargs)) tensors_of(v, outs);
  at::Tensor objective;
  for (size_t i = 0; i < outs.size() && i < cotangents.size(); ++i) {
    if (!cotangents[i].is_tensor() || !outs[i].t.requires_grad()) continue;
    at::Tensor term = (outs[i].t * cotangents[i].t).sum();
    objective = objective.defined() ? objective + term : term;
  }
  if (objective.defined() && !leaves.empty()) objective.backward({}, false, false, leaves);
  std::vector<RValue> grads;
  for (const auto& l : leaves) grads.push_back(RValue::of(l.grad().defined() ? l.grad() : at::zeros_like(l)));
  return result(std::move(grads));
}

}  // namespace

std::shared_ptr<const ExecRule> fallback_rule(std::string_view symbol_name) {
  if (symbol_name == ops::kFallbackVjp)
    return std::make_shared<const ExecRule>([](const ExecContext&, const std::vector<RValue>& a, const RKwargs& k) {
      return vjp(a, k);
    });
  if (!ops::is_fallback_name(symbol_name)) return nullptr;
  std::optional<c10::OperatorHandle> found;
  try {
    found = ops::fallback_operator(symbol_name);
  } catch (const tv::OpError&) {
    return nullptr;  // the executor names the unknown symbol
  }
  c10::OperatorHandle op = *found;
  return std::make_shared<const ExecRule>([op](const ExecContext&, const std::vector<RValue>& a, const RKwargs& k) {
    // Grad mode on (still below autograd: nothing is recorded), as in the eager training step the
    // recording ran: some operators choose their kernel by it, and LibTorch 2.6's CPU LSTM gives
    // other numbers without it.
    c10::AutoGradMode grad_mode(true);
    std::vector<RValue> outs;
    for (const auto& v : call(op, a, k)) tensors_of(v, outs);
    return result(std::move(outs));
  });
}

}  // namespace tv::exec::detail
