// The engine's training step as the benchmarks run it: one executor over a built pipeline's final
// prologue, forward and backward (replay/step.h) on the module's own inputs, with cotangents drawn
// once (seed 1234) from a first forward's outputs. The module and the stages must outlive it; the
// executor reads the parameters from the module. Header-only; for tests/bench.
#pragma once
#include <ATen/ATen.h>

#include <utility>
#include <vector>

#include "jit/module.h"
#include "history/stages.h"
#include "replay/cuda_graph.h"
#include "replay/eager.h"
#include "replay/module_view.h"
#include "replay/step.h"

namespace tv::bench {

class EngineStep {
 public:
  // `options` sets the device and anything else the executor needs (a communicator); its module
  // view is replaced by one of `module`.
  EngineStep(const jit::Module& module, const StageHistory& stages, exec::ExecOptions options)
      : module_(module), stages_(stages), view_(module), options_(viewing(std::move(options))), executor_(options_) {
    for (const auto& i : module.inputs) inputs_.push_back(*i.value);
    cotangents_ = make_cotangents(step_forward(executor_, stages_, inputs_).outputs, 1234);
  }
  EngineStep(const EngineStep&) = delete;
  EngineStep& operator=(const EngineStep&) = delete;

  // One step: the outputs and the gradient of every computation argument.
  StepTensors operator()() {
    auto f = step_forward(executor_, stages_, inputs_);
    // Settle::later: like torch's DDP, the host does not wait for the last all-reduce; it queues
    // the next step meanwhile (a failure is thrown by the next step's collectives).
    return {f.outputs, step_gradients(executor_, stages_, f.saved, cotangents_, {}, Settle::later)};
  }

  const jit::Module& module() const { return module_; }
  const StageHistory& stages() const { return stages_; }
  const exec::ExecOptions& options() const { return options_; }
  const std::vector<at::Tensor>& inputs() const { return inputs_; }
  const std::vector<at::Tensor>& cotangents() const { return cotangents_; }

 private:
  exec::ExecOptions viewing(exec::ExecOptions o) const {
    o.module = &view_;
    return o;
  }

  const jit::Module& module_;
  const StageHistory& stages_;
  JitModuleView view_;
  exec::ExecOptions options_;
  exec::Executor executor_;
  std::vector<at::Tensor> inputs_, cotangents_;
};

}  // namespace tv::bench
