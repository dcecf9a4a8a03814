// The built-in model zoo: linear (the seed), mlp, llama_mlp, gpt.
// Contract: `make_model(name, params)` builds a Module whose weights and example inputs depend only
// on the `seed` parameter (a private CPU generator, then moved to `device`): the same seed gives the
// same tensors in every run and process. Every model takes `seed` (default 0) and `device`
// (default cpu). Unknown model, unknown parameter or a bad value throws std::invalid_argument whose
// message names the culprit and lists the valid choices.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "jit/module.h"

namespace tv::jit {

struct ModelParam {
  std::string name;
  std::string default_value;
  std::string description;
};

struct ModelInfo {
  std::string name;
  std::string description;  // one line
  std::vector<ModelParam> params;
};

std::vector<ModelInfo> list_models();
// The Python class a built-in model stands for, as Python's type() names it: "linear" is
// torch.nn.modules.linear.Linear, the others torch.nn.modules.module.Module.
std::string python_class(const std::string& model);

Module make_model(const std::string& name, const std::map<std::string, std::string>& params = {});
// The checks of make_model without its memory (the model is built on the meta device): throws what
// make_model would, for any size asked for.
void check_model(const std::string& name, const std::map<std::string, std::string>& params = {});

}  // namespace tv::jit
