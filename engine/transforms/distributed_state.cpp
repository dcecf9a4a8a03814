#include "transforms/distributed_state.h"

#include <mutex>

#include "transforms/autocast.h"
#include "transforms/collectives.h"
#include "transforms/ddp.h"
#include "transforms/fsdp.h"

namespace tv {

void check_capture_at_jit(const OrderedTransforms& ordered, const PipelineSpec& spec) {
  if (!spec.capture_at_jit) return;
  for (size_t i = 0; i < ordered.transforms.size(); ++i) {
    const auto& t = ordered.transforms[i];
    bool distributes = false;
    for (const auto& c : t->claims()) distributes = distributes || c == "parameter-distribution";
    if (!distributes || i >= ordered.after_jit.size() || !ordered.after_jit[i]) continue;
    const std::string n = t->name();
    std::string fix = "drop --capture-at-jit (lazy application), or apply " + n + " before jit: --order " + n + ",jit";
    std::string message =
        "ValueError: None had an unexpected type <class 'NoneType'>. Supported types are <class "
        "'torch.distributed.distributed_c10d.ProcessGroup'>\n"
        "  What happened: process_group_for_" + n + " was read when jit() was called, before " + n +
        "() set it: the trace captured None, and the backward's collectives (torch_all_reduce_prim_impl / "
        "torch_reduce_scatter_prim_impl) were given None as their process group (order " + spec.label() + ").\n"
        "  Rule " + kStateReadAtCall + ": a transform that sets module state must run before the state is read; "
        "with lazy application (the default) " + n + "(jit(m)) and jit(" + n + "(m)) read it at the first call "
        "and are equivalent.\n"
        "  Fix: " + fix;
    throw CapturedStateError(message, kStateReadAtCall, fix);
  }
}

}  // namespace tv
