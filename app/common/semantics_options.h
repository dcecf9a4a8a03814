// Options shared by the commands that run pipelines: --semantics MODE --workaround NAME.
// Contract: add_to registers both with their help (the modes listed); check() throws BadInput for
// an unknown mode or a workaround the mode has nothing for (exit 2), before anything runs.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "record/results.h"

namespace tv::app {

struct SemanticsOptions {
  std::string semantics = "lazy";
  std::string workaround;

  void add_to(CLI::App& cmd);
  void check() const;
  void apply(PipelineSpec& spec) const;  // after check()
};

}  // namespace tv::app
