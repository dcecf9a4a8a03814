// Options shared by the commands that run pipelines: --semantics MODE --workaround NAME
// --shard-group N.
// Contract: add_to registers them with their help (the modes listed); check() throws BadInput for
// an unknown mode or a workaround the mode has nothing for (exit 2), before anything runs;
// apply(spec), on a spec whose order and world are set, throws BadInput for a shard group the
// order has no hsdp for or that does not divide the world.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "record/results.h"

namespace tv::app {

struct SemanticsOptions {
  std::string semantics = "lazy";
  std::string workaround;
  int shard_group = 0;  // hsdp: ranks per shard group; 0: hsdp's default

  void add_to(CLI::App& cmd);
  void check() const;
  void apply(PipelineSpec& spec) const;  // after check()
};

}  // namespace tv::app
