#include "session/run.h"

#include <algorithm>

#include "dist/launch.h"
#include "exec/device_check.h"
#include "jit/zoo.h"
#include "pipeline/pipeline.h"
#include "replay/world_replay.h"
#include "session/assess.h"
#include "transforms/hsdp.h"

namespace tv {
namespace {

ModelRecord model_record(const jit::Module& m, const RunRequest& request) {
  ModelRecord r;
  r.name = request.model;
  r.params = request.params;
  for (const auto& p : m.parameters) {
    auto meta = p.meta();
    r.parameters.push_back({p.name, meta.shape, meta.dtype});
  }
  return r;
}

PipelineRecord run_one(const RunRequest& request, const PipelineSpec& spec) {
  PipelineRecord record;
  record.spec = spec;
  try {
    const SemanticsMode& semantics = find_semantics(spec.semantics);
    check_workaround(semantics, spec.workaround);
    // refused orders fail before any rank starts
    ValidatedOrder order(spec.order, semantics, jit::python_class(request.model));
    check_shard_group(spec.order, spec.world_size, spec.shard_group);
    // One rank per process needs one device per process.
    if (auto why = exec::device_unavailable(spec.device, request.launch ? 1 : spec.world_size); !why.empty()) {
      record.error = why;
      return record;
    }
    int timeout_seconds = 60;
    if (request.launch)
      timeout_seconds = static_cast<int>(std::max<int64_t>(1, request.launch->timeout().count() / 1000));
    auto result = run_world({request.model, request.params, spec, request.replay, timeout_seconds,
                             request.cuda_graph_steps, request.generated_kernels, request.launch, request.model_factory,
                             request.reference},
                            order);
    record.stages = std::move(result.stages);
    if (request.replay) record.replay = std::move(result.replay);
  } catch (const IllegalOrder& e) {
    record.error = e.what();
    record.rule = e.rule();
  } catch (const PipelineFailure& e) {
    record.stages = e.stages();
    record.error = e.what();
    record.rule = e.rule();
  } catch (const std::exception& e) {
    record.error = e.what();
  }
  return record;
}

}  // namespace

Capture run_pipelines(const RunRequest& request, const ProgressFn& progress) {
  Capture capture;
  capture.tool_version = "0.1.0";
  if (request.model_factory && request.replay && !request.reference.compute)
    throw std::invalid_argument("model '" + request.model + "' is rebuilt from a capture: it has no eager reference to "
                                "replay against here (save it from Python with its inputs to store one); run it "
                                "without replay");
  capture.model = model_record(request.model_factory ? request.model_factory(request.params)
                                                     : jit::make_model(request.model, request.params),
                               request);
  PipelineSpec jit_alone;
  jit_alone.order = {"jit"};
  auto specs = request.pipelines.empty() ? std::vector<PipelineSpec>{jit_alone} : request.pipelines;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (progress) progress(static_cast<double>(i) / specs.size(), "pipeline " + specs[i].label());
    capture.pipelines.push_back(run_one(request, specs[i]));
  }
  if (request.gather_ranks) request.gather_ranks(capture);
  for (auto& p : capture.pipelines) p.outcome = assess_pipeline(p);
  for (size_t i = 1; i < capture.pipelines.size(); ++i)
    capture.comparisons.push_back(compare_pipelines(capture, 0, static_cast<int>(i)));
  if (progress) progress(1.0, "done");
  return capture;
}

}  // namespace tv
