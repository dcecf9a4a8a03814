#include "pipeline/run.h"

#include "canonical/canonical.h"
#include "exec/device_check.h"
#include "jit/zoo.h"
#include "pipeline/pipeline.h"
#include "replay/world_replay.h"
#include "transforms/distributed_state.h"

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
    check_capture_at_jit(validate_order(spec.order), spec);  // refused orders fail before any rank starts
    if (auto why = exec::device_unavailable(spec.device, spec.world_size); !why.empty()) {
      record.error = why;
      return record;
    }
    auto result = run_world(
        {request.model, request.params, spec, request.replay, 60, request.cuda_graph_steps, request.generated_kernels});
    record.stages = std::move(result.stages);
    if (request.replay) record.replay = std::move(result.replay);
  } catch (const IllegalOrder& e) {
    record.error = e.what();
    record.rule = e.rule();
  } catch (const CapturedStateError& e) {
    record.error = e.what();
    record.rule = e.rule();
  } catch (const std::exception& e) {
    record.error = e.what();
  }
  return record;
}

Comparison compare(const Capture& c, int left, int right) {
  Comparison out;
  out.left = left;
  out.right = right;
  const auto& a = c.pipelines[left];
  const auto& b = c.pipelines[right];
  if (!a.error.empty() || !b.error.empty()) {
    out.verdict = "failed";
    return out;
  }
  out.stages = compare_stages(a.stages, b.stages);
  out.traces_equal = true;
  for (auto kind : kTraceKinds) {
    auto fa = a.stages.last(kind), fb = b.stages.last(kind);
    if (bool(fa) != bool(fb) || (fa && !canonically_equal(*fa, *fb))) out.traces_equal = false;
  }
  out.numbers_equal = true;
  if (a.replay && b.replay) {
    for (size_t r = 0; r < a.replay->ranks.size() && r < b.replay->ranks.size(); ++r) {
      const auto& ra = a.replay->ranks[r];
      const auto& rb = b.replay->ranks[r];
      auto add = [&](const std::vector<TensorCheck>& xs, const std::vector<TensorCheck>& ys) {
        for (const auto& x : xs)
          for (const auto& y : ys)
            if (x.name == y.name) {
              NumericComparison n{static_cast<int>(r), x.name, std::abs(x.max_abs - y.max_abs), 0, x.pass && y.pass};
              n.max_rel = std::abs(x.max_rel - y.max_rel);
              out.numbers_equal = out.numbers_equal && n.pass;
              out.numbers.push_back(n);
            }
      };
      add(ra.outputs, rb.outputs);
      add(ra.gradients, rb.gradients);
      out.numbers_equal = out.numbers_equal && ra.pass() && rb.pass();
    }
  }
  // A rank that failed (a timeout, a dead peer) says nothing about the orders: the run failed.
  for (const auto* p : {&a, &b})
    if (p->replay)
      for (const auto& r : p->replay->ranks)
        if (!r.error.empty()) {
          out.verdict = "failed";
          return out;
        }
  out.verdict = out.traces_equal && out.numbers_equal ? "equivalent" : "different";
  return out;
}

}  // namespace

Capture run_pipelines(const RunRequest& request, const ProgressFn& progress) {
  Capture capture;
  capture.tool_version = "0.1.0";
  capture.model = model_record(jit::make_model(request.model, request.params), request);
  auto specs = request.pipelines.empty() ? std::vector<PipelineSpec>{PipelineSpec{{"jit"}}} : request.pipelines;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (progress) progress(static_cast<double>(i) / specs.size(), "pipeline " + specs[i].label());
    capture.pipelines.push_back(run_one(request, specs[i]));
  }
  for (size_t i = 1; i < capture.pipelines.size(); ++i) capture.comparisons.push_back(compare(capture, 0, static_cast<int>(i)));
  if (progress) progress(1.0, "done");
  return capture;
}

}  // namespace tv
