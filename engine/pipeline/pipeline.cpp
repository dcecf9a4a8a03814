#include "pipeline/pipeline.h"

#include <chrono>

#include "jit/acquire.h"
#include "passes/batch_gradients.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/delete_last_used.h"
#include "passes/fusion.h"
#include "passes/remat.h"
#include "passes/residual_epilogues.h"
#include "transforms/autograd.h"
#include "transforms/distributed_state.h"

namespace tv {

namespace {

// Runs `pass` on the last stage of `kind` and records the result.
template <typename Pass>
void run_pass(StageHistory& h, TraceKind kind, const char* name, Pass pass) {
  auto last = h.last(kind);
  if (!last) return;
  h.record_timed(kind, name, [&] { return pass(*last); });
}

// The module state at jit() and at the call, from what the order applied before and after jit.
// Batch Gradients saves kernel launches, which bound a GPU step. On the CPU its stacks are copies
// that cost more than the calls they save (the Python door's mlp step: 1.43x eager with the pass,
// 1.18x without), so a computation whose tensors are all on the CPU goes without it.
bool computes_on_cuda(const Trace& computation) {
  for (const auto& p : computation.params)
    if (p.proxy->is_tensor() && p.proxy->device.kind == Device::Kind::cuda) return true;
  return false;
}

TransformContext with_module_state(const ValidatedOrder& order, TransformContext c) {
  for (const auto& step : order.steps()) {
    if (!step.transform->distributes_parameters()) continue;
    c.at_call.process_group_for_ddp = true;
    if (!step.after_jit) c.at_jit.process_group_for_ddp = true;
  }
  if (c.workaround == kWorkaroundProcessGroup) c.at_jit = c.at_call;
  return c;
}

void build(BuiltPipeline& out, jit::Module& module, const ValidatedOrder& order, const TransformContext& context);

}  // namespace

BuiltPipeline build_pipeline(jit::Module& module, const ValidatedOrder& order, const TransformContext& context) {
  BuiltPipeline out;
  try {
    build(out, module, order, with_module_state(order, context));
  } catch (const StateReadFailure& e) {
    throw PipelineFailure(e.what(), e.rule(), std::move(out.stages));
  }
  return out;
}

namespace {

void build(BuiltPipeline& out, jit::Module& module, const ValidatedOrder& order, const TransformContext& context) {
  auto& h = out.stages;
  const auto transforms = order.instantiate();
  for (const auto& t : transforms) t->transform_module(module, context);

  auto start = std::chrono::steady_clock::now();
  auto acquired = jit::acquire(module);
  double ms = milliseconds_since(start);
  h.record(TraceKind::prologue, "acquisition", acquired.prologue, ms);
  h.record(TraceKind::forward, "acquisition", acquired.computation, ms);
  h.record(TraceKind::epilogue, "acquisition", acquired.epilogue, ms);

  for (const auto& t : transforms) t->pre_prologue(h, context);
  run_pass(h, TraceKind::forward, "Dead Code Elimination", [](const Trace& t) { return passes::dead_code_elimination(t); });

  auto computation = h.last(TraceKind::forward);
  bool training = false;
  for (const auto& p : computation->params) training = training || (p.proxy->is_tensor() && p.proxy->requires_grad);
  if (training) {
    auto start = std::chrono::steady_clock::now();
    auto fb = split_forward_backward(*computation);
    double ms = milliseconds_since(start);  // one pass made both
    h.record(TraceKind::forward, kGradPassName, fb.forward, ms);
    h.record(TraceKind::backward, kGradPassName, fb.backward, ms);
    out.requires_grad = fb.requires_grad;
  }
  for (const auto& t : transforms) t->post_optimization(h, context);

  const bool cuda = computes_on_cuda(*computation);
  for (auto kind : {TraceKind::forward, TraceKind::backward}) {
    run_pass(h, kind, "Common Subexpression Elimination", [](const Trace& t) { return passes::common_subexpression_elimination(t); });
    run_pass(h, kind, "Fusion", [](const Trace& t) { return passes::fusion_grouping(t); });
    if (cuda)
      run_pass(h, kind, "Residual Epilogues", [](const Trace& t) { return passes::residual_epilogues(t); });
    if (kind == TraceKind::backward && cuda)
      run_pass(h, kind, "Batch Gradients", [](const Trace& t) { return passes::batch_gradients(t); });
    bool clears = kind == TraceKind::backward;
    run_pass(h, kind, "Delete Last Used", [clears](const Trace& t) { return passes::delete_last_used(t, clears); });
  }
  if (training) out.saved_bytes = passes::saved_bytes(*h.last(TraceKind::forward));
}

}  // namespace

}  // namespace tv
