// Replay over W ranks: every rank builds the pipeline on its own module and runs it; the
// reference is eager LibTorch.
// Contract: rank r's module is the zoo model with seed = base seed + r (its own inputs). When the
// pipeline distributes parameters (a transform claims "parameter-distribution": ddp, fsdp) the
// weights are rank 0's (the transform broadcasts them) and each rank's gradients must equal the
// mean over ranks of the eager gradients on every rank's inputs, as the transform maps it to the
// rank (Transform::local_gradient: fsdp's shard); a transform that computes in a lower dtype
// (autocast) sets the tolerance to that dtype's;
// otherwise each rank is checked against its own eager run. W = 1 runs in this thread without a
// communicator. Collectives go through gloo on CPU and NCCL on CUDA. Stage history comes from rank 0.
// With `launch` (one rank per process, dist/launch.h) this process runs only its own rank, over a
// new communicator of the launch (NCCL on its LOCAL_RANK's GPU, every rank's model on that GPU), and
// fills only its own slot of the W rank results; on an error it aborts the group, so that the other
// processes stop promptly, and records the error in its slot.
#pragma once
#include <map>
#include <string>

#include "history/stages.h"
#include "jit/captured.h"
#include "replay/reference.h"
#include "record/results.h"
#include "transforms/order.h"

namespace tv {
namespace dist {
class Launch;
}

struct WorldReplayRequest {
  std::string model;
  std::map<std::string, std::string> params;
  PipelineSpec spec;
  bool replay = true;
  int timeout_seconds = 60;
  int cuda_graph_steps = 0;  // > 0: also replay the step as a CUDA graph (ReplayOptions); one rank only
  bool generated_kernels = true;  // ReplayOptions::generated_kernels
  dist::Launch* launch = nullptr;  // one rank per process: run this process's rank only
  jit::ModelFactory model_factory;  // builds the model instead of the zoo (RunRequest::model_factory)
  Reference reference;              // what the replay checks against (replay/eager.h); eager_reference by default
};

struct WorldReplayResult {
  StageHistory stages;
  Replay replay;
};

// `order` is request.spec.order, validated. Throws std::invalid_argument for bad models or devices,
// and PipelineFailure (pipeline.h) when the build stops on what a transform read.
WorldReplayResult run_world(const WorldReplayRequest&, const ValidatedOrder& order);

}  // namespace tv
