#include "common/model_options.h"

#include "common/errors.h"
#include "jit/zoo.h"

namespace tv::app {

void ModelOptions::add_to(CLI::App& cmd) {
  cmd.add_option("--model", model, "built-in model (see `thunder-viz models`)")->capture_default_str();
  cmd.add_option("--param", params, "model parameter as key=value, repeatable (e.g. --param layers=4)");
}

std::map<std::string, std::string> ModelOptions::param_map() const {
  std::map<std::string, std::string> out;
  for (const auto& p : params) {
    auto eq = p.find('=');
    if (eq == std::string::npos || eq == 0)
      throw BadInput("--param " + p + ": expected key=value, e.g. --param layers=4");
    out[p.substr(0, eq)] = p.substr(eq + 1);
  }
  return out;
}

jit::Module ModelOptions::make() const {
  try {
    return jit::make_model(model, param_map());
  } catch (const std::invalid_argument& e) {
    throw BadInput(e.what());
  }
}

}  // namespace tv::app
