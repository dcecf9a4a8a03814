#include "pipeline/stages.h"

#include "canonical/canonical.h"

namespace tv {

std::string_view trace_kind_name(TraceKind k) {
  switch (k) {
    case TraceKind::prologue: return "prologue";
    case TraceKind::forward: return "forward";
    case TraceKind::backward: return "backward";
    case TraceKind::epilogue: return "epilogue";
  }
  return "forward";
}

bool parse_trace_kind(std::string_view s, TraceKind* out) {
  for (auto k : kTraceKinds)
    if (trace_kind_name(k) == s) {
      *out = k;
      return true;
    }
  if (s == "computation" || s == "fwd") {
    *out = TraceKind::forward;
    return true;
  }
  if (s == "bwd") {
    *out = TraceKind::backward;
    return true;
  }
  return false;
}

std::vector<Stage>& StageHistory::of(TraceKind k) {
  switch (k) {
    case TraceKind::prologue: return prologue;
    case TraceKind::forward: return forward;
    case TraceKind::backward: return backward;
    case TraceKind::epilogue: return epilogue;
  }
  return forward;
}

const std::vector<Stage>& StageHistory::of(TraceKind k) const { return const_cast<StageHistory*>(this)->of(k); }

void StageHistory::record(TraceKind k, std::string pass, TracePtr trace, double milliseconds) {
  auto& list = of(k);
  bool changed = list.empty() || !canonically_equal(*list.back().trace, *trace);
  list.push_back({std::move(pass), std::move(trace), milliseconds, changed});
}

TracePtr StageHistory::last(TraceKind k) const {
  const auto& list = of(k);
  return list.empty() ? nullptr : list.back().trace;
}

}  // namespace tv
