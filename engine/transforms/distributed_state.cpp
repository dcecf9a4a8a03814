#include "transforms/distributed_state.h"

#include <fmt/format.h>

#include "transforms/order.h"

namespace tv {
namespace {

std::string found(bool group) { return group ? "the process group" : "None"; }

}  // namespace

StateReadFailure explain_missing_group(const std::string& error, const std::string& transform, StateConsumer consumer,
                                       const std::string& pass, const Trace& partial, int failed_at,
                                       const TransformContext& context) {
  const auto& mode = context.mode();
  const auto& failing = partial.body.at(failed_at);
  std::string reads;
  for (auto c : kStateConsumers)
    reads += fmt::format("{}{} reads {}: {}", reads.empty() ? "" : "; ", consumer_name(c), read_at_name(mode.reads(c)),
                         found(context.finds_process_group(c)));
  std::string fix = fmt::format(
      "apply {0} before jit (--order {0},jit), or copy the module's group into the snapshot (--workaround process-group: "
      "tmodel._lc_cd.process_group_for_ddp = tmodel._lc_cd.fn.process_group_for_ddp), or --semantics lazy",
      transform);
  std::string message = fmt::format(
      "{}\n"
      "  Raised by: the meta function of {} (its group argument is None, read by {}), bound symbol {} of the backward that \"{}\" was "
      "building (kept as the failed stage).\n"
      "  What was read when ({}): jit() snapshotted process_group_for_ddp before {}() set it: {}; at the first call "
      "the module has {}. {}.\n"
      "  Rule {}: a transform that sets module state must run before the state is read; with --semantics lazy every "
      "consumer reads it at the first call and both orders are the same program.\n"
      "  Fix: {}",
      error, failing.symbol ? failing.symbol->name : std::string("?"), consumer_name(consumer), failed_at, pass, mode.name, transform,
      found(context.at_jit.process_group_for_ddp), found(context.at_call.process_group_for_ddp), reads,
      rule::kStateReadAtCall, fix);
  return StateReadFailure(message, std::string(rule::kStateReadAtCall), fix);
}

}  // namespace tv
