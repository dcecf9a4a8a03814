// --profile N of the step benchmarks: one more step with per-bound-symbol times (CUDA events on
// CUDA), then its N costliest statements (a fusion with the ops it runs) and the time per symbol
// over the whole step, on stderr. Header-only; for tests/bench.
#pragma once
#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine_step.h"
#include "replay/step.h"

namespace tv::bench {

// What a fused statement runs: "fusion3[ltorch.mul ltorch.add ...]"; other statements their name.
inline std::string statement_label(const BoundSymbol& b) {
  if (b.name().rfind("fusion", 0) != 0) return b.name();
  std::string out = b.name() + "[";
  for (size_t i = 0; i < b.subsymbols.size(); ++i) out += (i ? " " : "") + b.subsymbols[i].name();
  return out + "]";
}

// The `top` costliest statements of one timed step, then the time per symbol over the whole step.
inline void print_profile(const std::vector<SymbolTiming>& timings, const StageHistory& stages, int top,
                          std::ostream& out) {
  double total = 0;
  std::map<std::string, std::pair<double, int>> per_symbol;
  std::vector<std::pair<double, std::string>> statements;
  for (const auto& t : timings) {
    auto trace = stages.last(t.trace == "backward" ? TraceKind::backward : TraceKind::forward);
    std::string label = trace && t.index < static_cast<int>(trace->body.size()) ? statement_label(trace->body[t.index]) : t.symbol;
    total += t.microseconds;
    per_symbol[t.symbol].first += t.microseconds;
    per_symbol[t.symbol].second += 1;
    statements.emplace_back(t.microseconds, t.trace + " " + t.output + " = " + label);
  }
  std::sort(statements.rbegin(), statements.rend());
  out << "profile: " << timings.size() << " statements, " << total / 1e3 << " ms"
            << (timings.empty() || !timings.front().device_timer ? " (host timer)" : " (CUDA events)") << "\n";
  for (int i = 0; i < top && i < static_cast<int>(statements.size()); ++i)
    out << "  " << statements[i].first / 1e3 << " ms  " << statements[i].second << "\n";
  std::vector<std::pair<double, std::string>> symbols;
  for (const auto& [name, v] : per_symbol) symbols.emplace_back(v.first, name + " x" + std::to_string(v.second));
  std::sort(symbols.rbegin(), symbols.rend());
  out << "per symbol:\n";
  for (int i = 0; i < top && i < static_cast<int>(symbols.size()); ++i)
    out << "  " << symbols[i].first / 1e3 << " ms  " << symbols[i].second << "\n";
}

// One more step like `step`, with an executor that also times each statement; the profile goes to
// `out` (none: the step only, as the other ranks of a DDP step do).
inline void profile_step(const EngineStep& step, int top, std::ostream* out = &std::cerr) {
  std::vector<SymbolTiming> timings;
  std::string current;
  exec::ExecOptions options = step.options();
  options.on_timing = timing_recorder(timings, current);
  exec::Executor timed(options);
  auto hook = [&](TraceKind kind) { current = std::string(trace_kind_name(kind)); };
  auto f = step_forward(timed, step.stages(), step.inputs(), hook);
  step_backward(timed, step.module(), step.stages(), f.saved, step.cotangents(), hook);
  if (out) print_profile(timings, step.stages(), top, *out);
}

}  // namespace tv::bench
