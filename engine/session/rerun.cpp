#include "session/rerun.h"

#include <filesystem>

#include "replay/tensor_file.h"
#include "jit/zoo.h"

namespace tv {

CaptureRerun rerun_of(const Capture& capture, const std::string& folder) {
  CaptureRerun r;
  const std::string& model = capture.model.name;
  bool built_in = false;
  for (const auto& m : jit::list_models()) built_in = built_in || m.name == model;
  if (model.empty() || model == "imported") {
    r.why_not = "printouts imported from Thunder describe no module to run: open a capture saved from Python, or a "
                "built-in model with --model NAME";
    return r;
  }
  if (built_in) {
    r.request = RunRequest{};
    r.request->model = model;
    r.request->params = capture.model.params;
    return r;
  }
  try {
    const auto* p = capture.pipelines.empty() ? nullptr : &capture.pipelines.front();
    if (!p || p->stages.prologue.empty() || p->stages.forward.empty())
      throw std::invalid_argument("the capture holds no acquired prologue and forward");
    RunRequest q;
    q.model = model;
    q.replay = false;
    jit::CapturedProgram program{model, p->stages.prologue.front().trace.shared(),
                                 p->stages.forward.front().trace.shared(), {}};
    std::string stored;
    if (const std::string& file = capture.model.tensors; !file.empty()) {
      const auto path = std::filesystem::path(folder) / file;
      std::error_code ec;
      if (std::filesystem::exists(path, ec)) {
        CapturedTensors tensors = load_tensor_file(path.string());
        program.tensors = std::make_shared<const std::map<std::string, at::Tensor>>(std::move(tensors.held));
        if (tensors.reference) {
          q.reference = stored_reference(tensors.reference);
          q.replay = true;
        }
        stored = tensors.reference ? "stored" : "stored, no eager numbers";
      } else {
        stored = "missing: " + file + " is not beside the capture";
      }
    }
    q.model_factory = jit::captured_model(std::move(program));
    r.request = std::move(q);
    r.note = rerun_note(model, stored);
  } catch (const std::exception& e) {
    r.why_not = "model '" + model + "' is not built in, and its capture does not rebuild it (P0's first prologue and "
                "forward stages, and the tensors stored beside it): " + e.what();
  }
  return r;
}

std::string rerun_note(const std::string& model, const std::string& stored) {
  if (stored == "stored")
    return "model '" + model + "' rebuilt from the capture's acquired program, on the weights and inputs stored with "
           "it: a re-run checks every order's outputs and gradients against the eager numbers stored beside them";
  std::string why = stored.empty() ? "" : " (the stored tensors are " + stored + ")";
  return "model '" + model + "' rebuilt from the capture's acquired program" +
         (stored == "stored, no eager numbers" ? ", on the weights and inputs stored with it" : ", on random weights") +
         why + ": a re-run shows its traces under any order, not checked numbers (save it from Python with "
         "Inspector.save(path, inputs=...) to store them)";
}

}  // namespace tv
