// Semantics modes: which consumer of module state reads it when. Data, not code paths.
// Contract:
//  - A mode is a row of semantics_modes(): for each StateConsumer, whether it reads the module at
//    the first call or the snapshot jit() took; and whether ddp and fsdp accept only a jitted
//    module. `lazy` (the default) reads everything at the first call; `thunder-2024-03` is what
//    Thunder did at the seed (DDP's backward bucketing read CompileData's copy taken at jit(), the
//    forward's synchronize and FSDP read the module at the call); `thunder-2026-01` is Thunder
//    today (ddp/fsdp refuse a module that is not jitted).
//  - The only state is `process_group_for_ddp`, set on the module by ddp and fsdp. ModuleState
//    says whether it was set; `state_at_jit` / `state_at_call` compute it from the order (what was
//    applied before jit, what was applied at all). The `process-group` workaround is Thunder's
//    `tmodel._lc_cd.process_group_for_ddp = tmodel._lc_cd.fn.process_group_for_ddp`: the snapshot
//    takes the module's group. It exists only for modes where a consumer reads the snapshot.
//  - find_semantics / check_workaround throw std::invalid_argument saying what is known.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace tv {

enum class StateConsumer {
  ddp_forward_synchronize,  // ddp's forward: broadcast / synchronize the parameters
  ddp_backward_bucketing,   // ddp's backward: the all-reduces of the gradient buckets
  fsdp_collectives,         // fsdp: all-gather in the forward, reduce-scatter in the backward
};
inline constexpr StateConsumer kStateConsumers[] = {StateConsumer::ddp_forward_synchronize,
                                                    StateConsumer::ddp_backward_bucketing,
                                                    StateConsumer::fsdp_collectives};
std::string_view consumer_name(StateConsumer);  // "ddp backward bucketing", "fsdp"

enum class ReadAt { first_call, jit_snapshot };
std::string_view read_at_name(ReadAt);  // "the module at the first call", "the snapshot taken at jit()"

struct SemanticsMode {
  std::string_view name;         // "thunder-2024-03"
  std::string_view description;  // one line
  ReadAt ddp_forward_synchronize, ddp_backward_bucketing, fsdp_collectives;
  bool distributors_need_jitted_module;  // ddp/fsdp applied before jit are refused
  ReadAt reads(StateConsumer) const;
  bool has_snapshot_reader() const;  // some consumer reads the jit() snapshot: a workaround applies
};

inline constexpr std::string_view kLazy = "lazy";
inline constexpr std::string_view kWorkaroundProcessGroup = "process-group";

const std::vector<SemanticsMode>& semantics_modes();  // lazy first
const SemanticsMode& find_semantics(std::string_view name);  // throws std::invalid_argument
std::vector<std::string> semantics_names();
// Throws std::invalid_argument for an unknown workaround or one the mode has no use for.
void check_workaround(const SemanticsMode&, std::string_view workaround);

struct ModuleState {
  bool process_group_for_ddp = false;  // set by ddp or fsdp; None when false
};

// Whether a consumer finds a process group: in the module at the call, or in the snapshot.
bool finds_process_group(const SemanticsMode&, StateConsumer, const ModuleState& at_jit, const ModuleState& at_call);

}  // namespace tv
