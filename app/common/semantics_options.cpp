#include "common/semantics_options.h"

#include "common/errors.h"
#include "transforms/hsdp.h"
#include "transforms/semantics.h"

namespace tv::app {

void SemanticsOptions::add_to(CLI::App& cmd) {
  std::string modes;
  for (const auto& m : semantics_modes()) modes += "\n  " + std::string(m.name) + ": " + std::string(m.description);
  cmd.add_option("--semantics", semantics, "when transforms read module state:" + modes)->capture_default_str();
  cmd.add_option("--workaround", workaround,
                 "process-group: copy the module's process group into the jit() snapshot, as "
                 "tmodel._lc_cd.process_group_for_ddp = tmodel._lc_cd.fn.process_group_for_ddp (thunder-2024-03)");
  cmd.add_option("--shard-group", shard_group,
                 "hsdp: ranks per shard group, a divisor of the world (fsdp within each group, ddp across the "
                 "groups); default: half the world when it is even, else the whole world")
      ->check(CLI::Range(1, 1 << 20));
}

void SemanticsOptions::check() const {
  try {
    check_workaround(find_semantics(semantics), workaround);
  } catch (const std::invalid_argument& e) {
    throw BadInput(std::string(workaround.empty() ? "--semantics: " : "--workaround: ") + e.what());
  }
}

void SemanticsOptions::apply(PipelineSpec& spec) const {
  spec.semantics = semantics;
  spec.workaround = workaround;
  spec.shard_group = shard_group;
  try {
    check_shard_group(spec.order, spec.world_size, shard_group);
  } catch (const std::invalid_argument& e) {
    throw BadInput(std::string("--shard-group: ") + e.what());
  }
}

}  // namespace tv::app
