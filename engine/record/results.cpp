#include "record/results.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tv {

double tolerance(DType d) {
  switch (d) {
    case DType::f64: return 1e-10;
    case DType::f16: return 1e-2;
    case DType::bf16: return 2e-2;
    default: return 1e-5;
  }
}

double tolerance(DType d, int64_t summed_terms) {
  return tolerance(d) * std::max(1.0, std::sqrt(static_cast<double>(summed_terms) / 2.0));
}

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
