// Transform orders: what a user wrote ("jit,ddp"), checked once against the composition rules.
// Contract: constructing a ValidatedOrder is the one place an order is checked; it throws
// IllegalOrder naming a row of composition_rules() and saying how to fix the order, or
// std::invalid_argument for a name that is no transform. The semantics mode is part of the check. Everything past a door (CLI, GUI,
// Python) takes a ValidatedOrder and checks nothing again. composition_rules() is the one table of
// rule names, explanations and fixes that every door and the rules matrix print.
#pragma once
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "transforms/transform.h"

namespace tv {

struct CompositionRule {
  std::string_view name;         // "one-parameter-distribution"
  std::string_view explanation;  // why the rule holds
  std::string_view fix;          // what to do when an order breaks it ("" for rules that refuse nothing)
};

namespace rule {
inline constexpr std::string_view kJitRequired = "jit-required";
inline constexpr std::string_view kJitOnce = "jit-once";
inline constexpr std::string_view kTransformOnce = "transform-once";
inline constexpr std::string_view kOneParameterDistribution = "one-parameter-distribution";
inline constexpr std::string_view kStateReadAtCall = "state-read-at-call";
inline constexpr std::string_view kThunderModuleOnly = "thunder-module-only";
inline constexpr std::string_view kOrderIndependentHooks = "order-independent-hooks";
inline constexpr std::string_view kOrderDependent = "order-dependent";
inline constexpr std::string_view kRunFailed = "run-failed";
}  // namespace rule

const std::vector<CompositionRule>& composition_rules();
// The row of `name`, or null.
const CompositionRule* find_composition_rule(std::string_view name);

// An order the engine refuses: `rule` names the composition rule, `fix` says what to do.
class IllegalOrder : public std::invalid_argument {
 public:
  IllegalOrder(std::string_view rule, const std::string& message, std::string fix);
  const std::string& rule() const { return rule_; }
  const std::string& fix() const { return fix_; }

 private:
  std::string rule_, fix_;
};

class ValidatedOrder {
 public:
  struct Step {
    // For what the transform declares (claims, local_gradient, computes_in): a hook may keep state
    // between hooks (fsdp's full shapes), so a pipeline build runs fresh instances (instantiate).
    std::shared_ptr<const Transform> transform;
    bool after_jit = false;  // applied to the jitted module: ddp in jit,ddp
  };

  // `semantics` may refuse more (thunder-2026-01: ddp and fsdp only after jit); `module_class` is
  // the Python class of the module, as Thunder's TypeError names it.
  explicit ValidatedOrder(std::vector<std::string> names, const SemanticsMode& semantics = semantics_modes().front(),
                          const std::string& module_class = "torch.nn.modules.module.Module");

  const std::vector<std::string>& names() const { return names_; }  // as written, jit included
  std::string label() const;                                        // "jit,ddp"
  const std::vector<Step>& steps() const { return steps_; }         // the user's order, without jit
  // New instances of the transforms, in the user's order, for one pipeline build (one per rank).
  std::vector<std::unique_ptr<Transform>> instantiate() const;
  const Transform* parameter_distributor() const;                   // ddp or fsdp; null when none
  std::optional<DType> computes_in(const TransformContext&) const;  // a lowered dtype (autocast)

 private:
  std::vector<std::string> names_;
  std::vector<Step> steps_;
};

// "jit,ddp" for {"jit", "ddp"}.
std::string order_label(const std::vector<std::string>& names);

}  // namespace tv
