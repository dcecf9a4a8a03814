#include "transforms/distributed_state.h"


namespace tv {

void check_capture_at_jit(const ValidatedOrder& order, bool capture_at_jit) {
  if (!capture_at_jit) return;
  for (const auto& step : order.steps()) {
    if (!step.transform->distributes_parameters() || !step.after_jit) continue;
    const std::string n = step.transform->name();
    std::string fix = "drop --capture-at-jit (lazy application), or apply " + n + " before jit: --order " + n + ",jit";
    std::string message =
        "ValueError: None had an unexpected type <class 'NoneType'>. Supported types are <class "
        "'torch.distributed.distributed_c10d.ProcessGroup'>\n"
        "  What happened: process_group_for_" + n + " was read when jit() was called, before " + n +
        "() set it: the trace captured None, and the backward's collectives (torch_all_reduce_prim_impl / "
        "torch_reduce_scatter_prim_impl) were given None as their process group (order " + order.label() + " capture-at-jit).\n"
        "  Rule " + std::string(rule::kStateReadAtCall) + ": a transform that sets module state must run before the state is read; "
        "with lazy application (the default) " + n + "(jit(m)) and jit(" + n + "(m)) read it at the first call "
        "and are equivalent.\n"
        "  Fix: " + fix;
    throw CapturedStateError(message, std::string(rule::kStateReadAtCall), fix);
  }
}

}  // namespace tv
