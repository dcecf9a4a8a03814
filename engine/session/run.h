// Running pipelines: the one entry point the doors (CLI, GUI, Python) use to make a capture.
// Contract: `run_pipelines` builds the model once, runs every requested pipeline on the same
// weights and inputs (acquisition, transforms in their hook order, autograd, passes; replay over
// the world size when asked) and returns a Capture holding each pipeline's stage history, replay
// results, and the comparison of each pipeline with the first. A pipeline that fails or is refused
// does not stop the others: its record carries the error (and the rule). `progress` is called
// with a fraction in [0, 1] and a short description; it may be empty.
// One rank per process (`launch`, dist/launch.h): every process calls run_pipelines with the same
// request; each runs its own rank of every pipeline, then `gather_ranks` (capture/gather.h: every
// rank's results into rank 0's capture) runs before outcomes and comparisons are computed, so that
// rank 0's capture is the one a World of threads gives. The world size is the launch's.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "jit/captured.h"
#include "record/record.h"
#include "replay/reference.h"

namespace tv {
namespace dist {
class Launch;
}

struct RunRequest {
  std::string model = "linear";
  std::map<std::string, std::string> params;
  // Builds the model instead of the zoo (a capture's program, jit/captured.h); `model` names it. Its
  // numbers have no eager reference here unless `reference` brings one (the eager numbers stored
  // with the capture's weights): without it, run it with `replay` off.
  jit::ModelFactory model_factory;
  Reference reference;  // what replays check against (replay/eager.h); eager_reference when not set
  std::vector<PipelineSpec> pipelines;  // empty: one pipeline {"jit"}
  bool replay = true;                   // execute and compare against eager
  int cuda_graph_steps = 0;             // > 0: then replay the step as a CUDA graph (replay/cuda_graph.h)
  bool generated_kernels = true;        // fusion regions' pointwise runs as generated kernels
  dist::Launch* launch = nullptr;       // one rank per process (see above)
  std::function<void(Capture&)> gather_ranks;
};

using ProgressFn = std::function<void(double fraction, const std::string& what)>;

Capture run_pipelines(const RunRequest&, const ProgressFn& progress = {});

}  // namespace tv
