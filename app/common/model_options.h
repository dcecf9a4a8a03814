// Options shared by the commands that build a model: --model NAME --param k=v ... from the zoo, or
// --from CAPTURE: the model of a capture again (session/rerun.h), a built-in one by its name and
// parameters, a Python one rebuilt from its acquired program (on the weights stored beside it).
#pragma once
#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "jit/module.h"
#include "session/run.h"

namespace tv::app {

struct ModelOptions {
  std::string model = "linear";
  std::vector<std::string> params;  // "k=v"
  std::string from;                 // a capture whose model runs again

  void add_to(CLI::App& cmd);
  // Fills the model of `request` (model, params; or from the capture: a factory, its reference,
  // whether it replays); returns what a re-run of a captured model gives ("" otherwise). Throws
  // BadInput when the capture does not load or its model cannot run again.
  std::string apply(RunRequest& request) const;
  // Builds the model; throws BadInput naming a bad parameter and listing the valid ones.
  jit::Module make() const;
  std::map<std::string, std::string> param_map() const;
};

}  // namespace tv::app
