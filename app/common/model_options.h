// Options shared by the commands that build a model from the zoo: --model NAME --param k=v ...
#pragma once
#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "jit/module.h"

namespace tv::app {

struct ModelOptions {
  std::string model = "linear";
  std::vector<std::string> params;  // "k=v"

  void add_to(CLI::App& cmd);
  // Builds the model; throws BadInput naming a bad parameter and listing the valid ones.
  jit::Module make() const;
  std::map<std::string, std::string> param_map() const;
};

}  // namespace tv::app
