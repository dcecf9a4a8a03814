#include "record/results.h"

#include <cstdio>

namespace tv {

bool CudaGraphRun::matches() const { return ran && max_relative_difference <= 1e-3; }

std::string CudaGraphRun::describe() const {
  if (!ran) return "not run: " + error;
  char line[320];
  std::snprintf(line, sizeof line,
                "step %.3f ms, as one graph %.3f ms (%.3fx), mean of %d calls each; largest difference from the step's "
                "outputs and gradients %.3g (relative %.3g)%s",
                step_ms, graph_ms, step_ms > 0 ? graph_ms / step_ms : 0.0, steps, max_abs_difference,
                max_relative_difference, matches() ? "" : " (above 1e-3)");
  return line;
}

bool RankResult::pass() const {
  if (!error.empty()) return false;
  for (const auto& c : outputs)
    if (!c.pass) return false;
  for (const auto& c : gradients)
    if (!c.pass) return false;
  return true;
}

bool Replay::pass() const {
  for (const auto& r : ranks)
    if (!r.pass()) return false;
  return !ranks.empty();
}

std::string PipelineSpec::reference() const {
  return !order.empty() && order.front() == "thunder.jit" ? "Lightning Thunder's results" : "LibTorch eager";
}

std::string PipelineSpec::label() const {
  std::string out;
  for (const auto& t : order) out += (out.empty() ? "" : ",") + t;
  if (semantics != "lazy") out += " " + semantics;
  if (!workaround.empty()) out += " workaround " + workaround;
  if (shard_group > 0) out += " shard group " + std::to_string(shard_group);
  return out;
}

}  // namespace tv
