// Pipeline: from a module and a validated transform order to the full stage history of one call.
// Contract: `build_pipeline` applies the transforms at their hook points in this order whatever the
// user's order: transform_module, acquisition, pre_prologue, Dead Code Elimination, autograd (when
// a parameter or input requires grad), post_optimization, then Common Subexpression Elimination,
// Fusion and Delete Last Used on the forward and the backward. Every trace made on the way is a
// stage. The order was validated at the door (transforms/order.h); nothing is checked again here.
// The module state each transform reads (TransformContext::at_jit, at_call) comes from the order:
// at jit() the process group is set when ddp or fsdp was applied before jit, at the call when
// either was applied at all; the process-group workaround copies the call's into jit's. A
// transform that fails on what it read (distributed_state.h) throws PipelineFailure, which keeps
// the stages made so far, the partial one last.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "history/stages.h"
#include "jit/module.h"
#include "transforms/order.h"

namespace tv {

struct BuiltPipeline {
  StageHistory stages;
  std::vector<bool> requires_grad;  // per computation parameter
  int64_t saved_bytes = 0;          // saved for backward by the final forward
};

class PipelineFailure : public std::runtime_error {
 public:
  PipelineFailure(const std::string& message, std::string rule, StageHistory stages)
      : std::runtime_error(message), rule_(std::move(rule)), stages_(std::move(stages)) {}
  const std::string& rule() const { return rule_; }
  const StageHistory& stages() const { return stages_; }

 private:
  std::string rule_;
  StageHistory stages_;
};

// `module` is transformed in place by transform_module hooks (ddp broadcasts, fsdp shards).
BuiltPipeline build_pipeline(jit::Module& module, const ValidatedOrder& order, const TransformContext& context);

}  // namespace tv
