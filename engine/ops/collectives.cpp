#include "ops/collectives.h"

#include <mutex>

#include "ops/grad_rules.h"
#include "ops/ltorch.h"
#include "ops/op_utils.h"

namespace tv::collectives {
namespace {

ProxyPtr tensor_of(const std::vector<Value>& args, size_t i, const char* symbol) {
  if (i >= args.size() || !args[i].is_proxy() || !args[i].proxy->is_tensor())
    throw OpError(std::string(symbol) + " expects a tensor as argument " + std::to_string(i));
  return args[i].proxy;
}

ProxyPtr future_like(TraceBuilder& b, const Proxy& t, std::vector<int64_t> shape) {
  auto p = std::make_shared<Proxy>(*make_tensor(b.fresh_name("ft"), std::move(shape), t.dtype, t.device, t.requires_grad));
  p->kind = ProxyKind::future_tensor;
  return p;
}

// Appends `symbol(args) -> out` at the builder's current level.
ProxyPtr record(TraceBuilder& b, const char* symbol, std::vector<Value> args, ProxyPtr out) {
  BoundSymbol s;
  s.symbol = SymbolRegistry::global().find(symbol);
  s.args = std::move(args);
  s.outputs = {out};
  b.emit(std::move(s));
  return out;
}

std::vector<int64_t> scaled_dim0(const Proxy& t, int world, bool gather) {
  auto shape = t.shape;
  if (shape.empty()) shape = {1};
  if (gather) {
    shape[0] *= world;
  } else {
    if (world <= 0 || shape[0] % world != 0)
      throw OpError(std::string(kReduceScatter) + ": dim 0 (" + std::to_string(shape[0]) +
                    ") is not divisible by the world size " + std::to_string(world) + "; pad it first");
    shape[0] /= world;
  }
  return shape;
}

void check_group(const Value& group) {
  if (group.is_none())
    throw CollectiveTypeError(
        "ValueError: None had an unexpected type <class 'NoneType'>. Supported types are <class "
        "'torch.distributed.distributed_c10d.ProcessGroup'>");
}

void add_symbol(const char* name, SymbolImpl impl) {
  Symbol s;
  s.name = name;
  s.form = PrintForm::call;
  s.is_prim = true;
  s.impl = std::move(impl);
  s.traits = {"collective"};
  SymbolRegistry::global().add(std::move(s));
}

std::vector<Value> all_gather_grad(TraceBuilder& b, const BoundSymbol& f, const std::vector<Value>& cts) {
  ProxyPtr shard = grad::tensor_at(f, 0);
  ProxyPtr g = grad::cotangent_or_zeros(b, f, cts, 0);
  int64_t rows = shard->shape.empty() ? 1 : shard->shape[0];
  int world = static_cast<int>(g->shape.at(0) / std::max<int64_t>(rows, 1));
  ProxyPtr mean = ltorch::true_divide(b, Value::of(g), Value::integer(world));
  Value group = f.args.size() > 1 ? f.args[1] : Value::name(kGroup);
  ProxyPtr out = wait(b, reduce_scatter(b, mean, world, group));
  if (out->shape != shard->shape) out = ltorch::reshape(b, out, shard->shape);
  return {Value::of(out), Value::none(), Value::none(), Value::none()};
}

std::vector<Value> wait_grad(TraceBuilder& b, const BoundSymbol& f, const std::vector<Value>& cts) {
  return {Value::of(grad::cotangent_or_zeros(b, f, cts, 0))};
}

}  // namespace

void register_collective_symbols() {
  static std::once_flag once;
  std::call_once(once, [] {
    ltorch::register_ops();
    add_symbol(kAllReduce, [](TraceBuilder& b, const std::vector<Value>& a, const Kwargs&) {
      auto t = tensor_of(a, 0, kAllReduce);
      if (a.size() > 2) check_group(a[2]);
      return Value::of(future_like(b, *t, t->shape));
    });
    add_symbol(kWait, [](TraceBuilder& b, const std::vector<Value>& a, const Kwargs&) {
      auto ft = tensor_of(a, 0, kWait);
      return Value::of(make_tensor(b.fresh_name(), ft->shape, ft->dtype, ft->device, ft->requires_grad));
    });
    // The group's size is not among the arguments: record these with all_gather/reduce_scatter.
    for (const char* n : {kAllGather, kReduceScatter})
      add_symbol(n, [n](TraceBuilder&, const std::vector<Value>&, const Kwargs&) -> Value {
        throw OpError(std::string(n) + " needs the world size: record it with tv::collectives::" +
                      (n == std::string(kAllGather) ? "all_gather" : "reduce_scatter"));
      });
    register_grad_rule(ops::op(kAllGather), all_gather_grad);
    register_grad_rule(ops::op(kWait), wait_grad);
  });
}

Value group_argument(bool found) { return found ? Value::name(kGroup) : Value::none(); }

std::string group_name(int index) {
  std::string world = kGroup;
  return world.substr(0, world.rfind('_') + 1) + std::to_string(index);
}

ProxyPtr all_reduce(TraceBuilder& b, const ProxyPtr& t, bool skip_clone) {
  return all_reduce(b, t, group_argument(true), skip_clone);
}

ProxyPtr all_reduce(TraceBuilder& b, const ProxyPtr& t, const Value& group, bool skip_clone) {
  register_collective_symbols();
  auto out = record(b, kAllReduce, {Value::of(t), Value::name(kSumOp), group, Value::boolean(true), Value::boolean(skip_clone)},
                    future_like(b, *t, t->shape));
  check_group(group);
  return out;
}

ProxyPtr all_gather(TraceBuilder& b, const ProxyPtr& t, int group_size, const Value& group) {
  register_collective_symbols();
  return record(b, kAllGather, {Value::of(t), group, Value::boolean(true), Value::integer(0)},
                future_like(b, *t, scaled_dim0(*t, group_size, true)));
}

ProxyPtr reduce_scatter(TraceBuilder& b, const ProxyPtr& t, int group_size, const Value& group) {
  register_collective_symbols();
  return record(b, kReduceScatter, {Value::of(t), Value::name(kSumOp), group, Value::boolean(true)},
                future_like(b, *t, scaled_dim0(*t, group_size, false)));
}

ProxyPtr wait(TraceBuilder& b, const ProxyPtr& future) {
  register_collective_symbols();
  return record(b, kWait, {Value::of(future)},
                make_tensor(b.fresh_name(), future->shape, future->dtype, future->device, future->requires_grad));
}

// A trace reads only what it defines (the parser refuses a name read and never defined, and the
// objects Thunder reads without defining are names, not proxies), so its parameters and outputs
// are all its proxy names; walking the arguments too read every argument of a deep trace again.
ReservedNames names_of(const Trace& t) {
  ReservedNames names;
  for (const auto& p : t.params) names.add(p.proxy->name);
  walk(t.body, [&](const BoundSymbol& s, int) {
    for (const auto& o : s.outputs) names.add(o->name);
  });
  return names;
}

void reserve_names(TraceBuilder& b, const Trace& t) { b.reserve_names(names_of(t)); }

}  // namespace tv::collectives
