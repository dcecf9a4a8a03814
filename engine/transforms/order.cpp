#include "transforms/order.h"

#include <algorithm>

namespace tv {

const std::vector<CompositionRule>& composition_rules() {
  static const std::vector<CompositionRule> rules = {
      {rule::kJitRequired, "Every order needs jit: without it there is no trace to transform.",
       "add jit to the order, e.g. --order jit,ddp"},
      {rule::kJitOnce, "A jitted module is already jitted: jit appears once in an order.", "list jit once"},
      {rule::kTransformOnce,
       "Applying a transform twice would redo its work (divide gradients twice, shard shards): each appears once.",
       "list each transform once"},
      {rule::kOneParameterDistribution,
       "ddp, fsdp and hsdp each decide how parameters live on the ranks (replicated, sharded, sharded within groups "
       "and replicated across them): only one of them may own the same parameters. Applying ddp on top of fsdp would "
       "all-reduce gradients fsdp already reduce-scattered; hsdp is the composition that works (fsdp within groups "
       "of ranks, ddp across the groups).",
       "choose one of ddp, fsdp and hsdp (hsdp for fsdp within groups and ddp across them)"},
      {rule::kStateReadAtCall,
       "A transform that sets module state (ddp's process group) must run before that state is read. Thunder "
       "(thunder-2024-03) snapshotted process_group_for_ddp when jit() was called and DDP's backward bucketing read "
       "the snapshot, so in ddp(jit(m)) the all-reduce got None as its group and its meta check raised a ValueError; "
       "fsdp read the module at the call and worked. Reading state at the first call (lazy) makes both orders work.",
       "apply the transform before jit, use --workaround process-group, or --semantics lazy"},
      {rule::kThunderModuleOnly,
       "Thunder today (thunder-2026-01) applies ddp and fsdp to a jitted module only: thunder.jit(ddp(m)) raises a "
       "TypeError.",
       "apply ddp or fsdp after jit: --order jit,ddp"},
      {rule::kOrderIndependentHooks,
       "Transforms are applied lazily at the first call, each at its hook point (transform_module, pre_prologue, "
       "autograd, post_optimization), whatever order they were written in; so ddp(jit(m)) and jit(ddp(m)) are the "
       "same program with the same numbers.",
       ""},
      {rule::kOrderDependent, "The two orders are legal but give different programs; the diff shows how.", ""},
      {rule::kRunFailed, "A run failed for a reason other than a composition rule; the detail says why.", ""},
  };
  return rules;
}

const CompositionRule* find_composition_rule(std::string_view name) {
  for (const auto& r : composition_rules())
    if (r.name == name) return &r;
  return nullptr;
}

IllegalOrder::IllegalOrder(std::string_view rule, const std::string& message, std::string fix)
    : std::invalid_argument(message + " [rule: " + std::string(rule) + "] Fix: " + fix),
      rule_(rule),
      fix_(std::move(fix)) {}

std::string order_label(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

namespace {

// Thunder's TypeError when ddp or fsdp is given a module that is not jitted (thunder-2026-01).
std::string unjitted_module_error(const std::string& transform, const std::string& module_class) {
  if (transform == "fsdp" || transform == "hsdp")
    return "TypeError: Expected `model` to be of type `thunder.core.module.ThunderModule`, but got " +
           module_class.substr(module_class.rfind('.') + 1);
  return "TypeError: Thunder DDP only works on ThunderModule, got <class '" + module_class + "'>";
}

}  // namespace

ValidatedOrder::ValidatedOrder(std::vector<std::string> names, const SemanticsMode& semantics,
                               const std::string& module_class)
    : names_(std::move(names)) {
  int jits = 0;
  std::vector<std::pair<std::string, std::string>> claims;  // claim -> transform
  for (const auto& name : names_) {
    if (name == "jit") {
      if (++jits > 1)
        throw IllegalOrder(rule::kJitOnce, "the order applies jit twice",
                           "list jit once: a jitted module is jitted already");
      continue;
    }
    for (const auto& s : steps_)
      if (s.transform->name() == name)
        throw IllegalOrder(rule::kTransformOnce, "the order applies '" + name + "' twice",
                           "list each transform once; applying " + name + " again would redo its work");
    std::shared_ptr<const Transform> t = make_transform(name);
    for (const auto& c : t->claims())
      for (const auto& [claim, owner] : claims)
        if (claim == c)
          throw IllegalOrder("one-" + c, "'" + owner + "' and '" + name + "' both claim the " + c + " of the same parameters",
                             c == kParameterDistribution && name != "hsdp" && owner != "hsdp"
                                 ? "choose one of " + owner + " and " + name + ", or hsdp for " +
                                       "fsdp within groups of ranks and ddp across the groups (--order jit,hsdp)"
                                 : "choose one of " + owner + " and " + name);
    for (const auto& c : t->claims()) claims.emplace_back(c, name);
    if (semantics.distributors_need_jitted_module && t->distributes_parameters() && jits == 0)
      throw IllegalOrder(rule::kThunderModuleOnly, unjitted_module_error(name, module_class),
                         "apply " + name + " after jit: --order jit," + name + " (--semantics " + std::string(semantics.name) + ")");
    steps_.push_back({std::move(t), jits == 1});
  }
  if (jits == 0) throw IllegalOrder(rule::kJitRequired, "the order has no jit", "add jit, e.g. --order jit,ddp");
}

std::string ValidatedOrder::label() const { return order_label(names_); }

std::vector<std::unique_ptr<Transform>> ValidatedOrder::instantiate() const {
  std::vector<std::unique_ptr<Transform>> out;
  for (const auto& s : steps_) out.push_back(make_transform(s.transform->name()));
  return out;
}

const Transform* ValidatedOrder::parameter_distributor() const {
  for (const auto& s : steps_)
    if (s.transform->distributes_parameters()) return s.transform.get();
  return nullptr;
}

std::optional<DType> ValidatedOrder::computes_in(const TransformContext& context) const {
  for (const auto& s : steps_)
    if (auto d = s.transform->computes_in(context)) return d;
  return std::nullopt;
}

}  // namespace tv
