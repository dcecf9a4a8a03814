#include "replay/results.h"

namespace tv {

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

std::string PipelineSpec::label() const {
  std::string out;
  for (const auto& t : order) out += (out.empty() ? "" : ",") + t;
  if (capture_at_jit) out += " capture-at-jit";
  return out;
}

}  // namespace tv
