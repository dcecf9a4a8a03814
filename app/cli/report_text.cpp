#include "cli/report_text.h"

#include <fmt/format.h>

#include "record/rank_table.h"

namespace tv::cli {

std::string stage_state(const Stage& s) {
  if (!s.failed()) return s.changed ? "changed" : "unchanged";
  const auto* b = s.trace && s.failed_at < static_cast<int>(s.trace->body.size()) ? &s.trace->body[s.failed_at] : nullptr;
  return fmt::format("FAILED at bound symbol {}{}", s.failed_at, b && b->symbol ? " (" + b->symbol->name + ")" : "");
}

void print_stages(std::ostream& out, const PipelineRecord& p, bool all_stages, const PrintOptions& options) {
  for (auto kind : kTraceKinds) {
    const auto& stages = p.stages.of(kind);
    if (stages.empty()) continue;
    size_t first = all_stages ? 0 : stages.size() - 1;
    for (size_t i = first; i < stages.size(); ++i) {
      const auto& s = stages[i];
      out << fmt::format("=== {} stage {}/{}: {} ({:.2f} ms{}) ===\n", trace_kind_name(kind), i, stages.size() - 1, s.pass,
                         s.milliseconds, s.failed() ? ", " + stage_state(s) : s.changed ? "" : ", unchanged");
      out << print_trace(*s.trace, options) << "\n\n";
    }
  }
}

bool print_verdicts(std::ostream& out, const PipelineRecord& p) {
  if (!p.replay) return true;
  bool all = true;
  for (const auto& r : p.replay->ranks) {
    if (!r.error.empty()) {
      out << fmt::format("rank {}: FAIL: {}\n", r.rank, r.error);
      all = false;
      continue;
    }
    for (const auto* list : {&r.outputs, &r.gradients})
      for (const auto& c : *list) {
        out << fmt::format("rank {} {:<28} max abs {:.3e}  max rel {:.3e}  (tol {:.0e})  {}\n", r.rank, c.name, c.max_abs,
                           c.max_rel, c.tolerance, c.pass ? "PASS" : "FAIL");
        all = all && c.pass;
      }
    if (!r.first_non_finite.empty()) out << fmt::format("rank {}: first NaN/Inf: {}\n", r.rank, r.first_non_finite);
    if (r.cuda_graph) out << fmt::format("rank {}: CUDA graph: {}\n", r.rank, r.cuda_graph->describe());
  }
  if (p.replay->ranks.size() > 1) {
    RankTable ranks = rank_table(p.stages, *p.replay);
    out << fmt::format("ranks side by side: {}{}\n", ranks.first_ranks_part ? "FAIL: " : "", ranks.describe_ranks());
    all = all && !ranks.first_ranks_part;
  }
  return all;
}

}  // namespace tv::cli
