// The plain-text report: deterministic (no timings, no paths), so two runs diff cleanly.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/report.h"
#include "cli/report_text.h"
#include "session/assess.h"
#include "diff/diff.h"
#include "rules/compute.h"

namespace tv::cli {

namespace {

void pipeline_section(std::string& out, const Capture& c, int index) {
  const auto& p = c.pipelines[index];
  out += fmt::format("\n== pipeline {} [{}] world {} {}: {} ==\n", index, p.spec.label(), p.spec.world_size, p.spec.device,
                     pipeline_line(c, index));
  for (const auto& reason : p.outcome.reasons) out += "  " + reason + "\n";
  for (auto kind : kTraceKinds) {
    const auto& stages = p.stages.of(kind);
    for (size_t i = 0; i < stages.size(); ++i)
      out += fmt::format("  {:<9} {:>2} {:<40} {}\n", trace_kind_name(kind), i, stages[i].pass, stage_state(stages[i]));
  }
  if (!p.replay) return;
  for (const auto& r : p.replay->ranks) {
    if (!r.error.empty()) out += fmt::format("  rank {}: FAIL: {}\n", r.rank, r.error);
    for (const auto* list : {&r.outputs, &r.gradients})
      for (const auto& t : *list)
        out += fmt::format("  rank {} {:<32} max abs {:.3e}  max rel {:.3e}  tol {:.0e}  {}\n", r.rank, t.name, t.max_abs,
                           t.max_rel, t.tolerance, t.pass ? "PASS" : "FAIL");
    if (const auto& g = r.cuda_graph)  // whether it matched, not its times (this report has none)
      out += fmt::format("  rank {}: CUDA graph {}\n", r.rank,
                         !g->ran        ? "not run: " + g->error
                         : g->matches() ? std::string("replayed, the same numbers as the step")
                                        : std::string("replayed, numbers differ from the step's"));
  }
}

void comparison_section(std::string& out, const Capture& c, const Comparison& cmp) {
  const auto& a = c.pipelines[cmp.left];
  const auto& b = c.pipelines[cmp.right];
  out += fmt::format("\n== comparison {} ==\n", comparison_line(c, cmp));
  for (const auto& s : cmp.stages)
    out += fmt::format("  {:<9} {:>2} {:<36} {:<36} {}\n", s.kind, s.stage, s.left_pass.empty() ? "-" : s.left_pass,
                       s.right_pass.empty() ? "-" : s.right_pass, s.equal ? "same program" : "DIFFERENT");
  for (auto kind : kTraceKinds) {
    auto fa = a.stages.last(kind), fb = b.stages.last(kind);
    if (!fa || !fb) continue;
    auto d = diff_traces(*fa, *fb, PrintOptions{0, true, false});
    if (d.same_program) continue;
    out += fmt::format("  final {} differs:\n", trace_kind_name(kind)) + unified_text(d);
  }
}

}  // namespace

std::string text_report(const Capture& c, const std::string& name) {
  std::string out = fmt::format("Thunder Viz report: {}\nmodel: {}", name, c.model.name);
  for (const auto& [k, v] : c.model.params) out += fmt::format(" {}={}", k, v);
  out += "\n";
  for (const auto& p : c.model.parameters) out += fmt::format("  parameter {} [{}] {}\n", p.name, fmt::join(p.shape, ", "), short_name(p.dtype));
  out += "pipelines:\n";
  for (int i = 0; i < static_cast<int>(c.pipelines.size()); ++i)
    out += fmt::format("  {} [{}] world {} {}: {}\n", i, c.pipelines[i].spec.label(), c.pipelines[i].spec.world_size,
                       c.pipelines[i].spec.device, pipeline_line(c, i));
  for (int i = 0; i < static_cast<int>(c.pipelines.size()); ++i) pipeline_section(out, c, i);
  for (const auto& cmp : c.comparisons) comparison_section(out, c, cmp);
  if (c.rules) out += "\n" + rules_text(*c.rules);
  return out;
}

}  // namespace tv::cli
