// Pipeline: from a module and a transform order to the full stage history of one call.
// Contract: `validate_order` refuses illegal orders with the rule's name and the fix (IllegalOrder).
// `build_pipeline` applies the transforms at their hook points in this order whatever the user's
// order: transform_module, acquisition, pre_prologue, Dead Code Elimination, autograd (when a
// parameter or input requires grad), post_optimization, then Common Subexpression Elimination,
// Fusion and Delete Last Used on the forward and the backward. Every trace made on the way is a
// stage. The user's order only matters in capture-at-jit mode (transforms after `jit` read the
// state frozen at jit time), which the transforms themselves check.
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "jit/module.h"
#include "pipeline/stages.h"
#include "replay/results.h"
#include "transforms/transform.h"

namespace tv {

// An order the engine refuses; `rule` names the composition rule, `fix` says what to do.
class IllegalOrder : public std::invalid_argument {
 public:
  IllegalOrder(std::string rule, const std::string& message, std::string fix);
  const std::string& rule() const { return rule_; }
  const std::string& fix() const { return fix_; }

 private:
  std::string rule_, fix_;
};

struct OrderedTransforms {
  std::vector<std::unique_ptr<Transform>> transforms;  // in the user's order, without "jit"
  std::vector<bool> after_jit;                         // applied to the jitted module
};

OrderedTransforms validate_order(const std::vector<std::string>& order);

struct BuiltPipeline {
  StageHistory stages;
  std::vector<bool> requires_grad;  // per computation parameter
  int64_t saved_bytes = 0;          // saved for backward by the final forward
};

// `module` is transformed in place by transform_module hooks (ddp broadcasts, fsdp shards).
BuiltPipeline build_pipeline(jit::Module& module, const PipelineSpec& spec, const TransformContext& context);

}  // namespace tv
