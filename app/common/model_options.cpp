#include "common/model_options.h"

#include <filesystem>

#include "capture/capture.h"
#include "common/errors.h"
#include "jit/zoo.h"
#include "session/rerun.h"

namespace tv::app {

void ModelOptions::add_to(CLI::App& cmd) {
  auto* m = cmd.add_option("--model", model, "built-in model (see `thunder-viz models`)")->capture_default_str();
  auto* p = cmd.add_option("--param", params, "model parameter as key=value, repeatable (e.g. --param layers=4)");
  cmd.add_option("--from", from,
                 "run the model of this capture again (FILE.tvz.json): a built-in model by its name and parameters, "
                 "a model saved from Python rebuilt from its acquired program, on the weights and inputs stored "
                 "beside it (Inspector.save(path, inputs=...): checked against the eager numbers stored with them) "
                 "or else on random weights (traces only)")
      ->check(CLI::ExistingFile)
      ->excludes(m)
      ->excludes(p);
}

std::string ModelOptions::apply(RunRequest& request) const {
  if (from.empty()) {
    request.model = model;
    request.params = param_map();
    return "";
  }
  Capture capture;
  try {
    capture = load_capture(from);
  } catch (const CaptureError& e) {
    throw BadInput(std::string("--from: ") + e.what());
  }
  CaptureRerun again = rerun_of(capture, std::filesystem::path(from).parent_path().string());
  if (!again.request) throw BadInput("--from " + from + ": " + again.why_not);
  request.model = again.request->model;
  request.params = again.request->params;
  request.model_factory = again.request->model_factory;
  request.reference = again.request->reference;
  request.replay = again.request->replay;
  return again.note;
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
