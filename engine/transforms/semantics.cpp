#include "transforms/semantics.h"

#include <stdexcept>

namespace tv {

std::string_view consumer_name(StateConsumer c) {
  switch (c) {
    case StateConsumer::ddp_forward_synchronize: return "ddp forward synchronize";
    case StateConsumer::ddp_backward_bucketing: return "ddp backward bucketing";
    case StateConsumer::fsdp_collectives: return "fsdp";
  }
  return "?";
}

std::string_view read_at_name(ReadAt r) {
  return r == ReadAt::first_call ? "the module at the first call" : "the snapshot taken at jit()";
}

const std::vector<SemanticsMode>& semantics_modes() {
  using enum ReadAt;
  // name, description, ddp forward synchronize, ddp backward bucketing, fsdp, only a jitted module
  static const std::vector<SemanticsMode> modes = {
      {kLazy, "every transform reads module state at the first call", first_call, first_call, first_call, false},
      {"thunder-2024-03",
       "Thunder at the seed (94c9494): jit() snapshots process_group_for_ddp into CompileData; only ddp's backward "
       "bucketing reads that snapshot",
       first_call, jit_snapshot, first_call, false},
      {"thunder-2026-01", "Thunder today (1e22aac): ddp and fsdp accept only a jitted module", first_call, first_call,
       first_call, true},
  };
  return modes;
}

ReadAt SemanticsMode::reads(StateConsumer c) const {
  switch (c) {
    case StateConsumer::ddp_forward_synchronize: return ddp_forward_synchronize;
    case StateConsumer::ddp_backward_bucketing: return ddp_backward_bucketing;
    case StateConsumer::fsdp_collectives: return fsdp_collectives;
  }
  return ReadAt::first_call;
}

bool SemanticsMode::has_snapshot_reader() const {
  for (auto c : kStateConsumers)
    if (reads(c) == ReadAt::jit_snapshot) return true;
  return false;
}

std::vector<std::string> semantics_names() {
  std::vector<std::string> out;
  for (const auto& m : semantics_modes()) out.emplace_back(m.name);
  return out;
}

const SemanticsMode& find_semantics(std::string_view name) {
  for (const auto& m : semantics_modes())
    if (m.name == name) return m;
  std::string known;
  for (const auto& n : semantics_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown semantics '" + std::string(name) + "' (known: " + known + ")");
}

void check_workaround(const SemanticsMode& mode, std::string_view workaround) {
  if (workaround.empty()) return;
  if (workaround != kWorkaroundProcessGroup)
    throw std::invalid_argument("unknown workaround '" + std::string(workaround) + "' (known: " +
                                std::string(kWorkaroundProcessGroup) + ")");
  if (!mode.has_snapshot_reader())
    throw std::invalid_argument("workaround '" + std::string(workaround) + "' has nothing to work around in semantics '" +
                                std::string(mode.name) +
                                "': no transform reads the snapshot taken at jit() (use it with --semantics thunder-2024-03)");
}

bool finds_process_group(const SemanticsMode& mode, StateConsumer consumer, const ModuleState& at_jit,
                         const ModuleState& at_call) {
  return (mode.reads(consumer) == ReadAt::jit_snapshot ? at_jit : at_call).process_group_for_ddp;
}

}  // namespace tv
