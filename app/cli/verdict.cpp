#include "cli/verdict.h"

#include <fmt/format.h>

#include "canonical/canonical.h"

namespace tv::cli {

namespace {

// The checks of a replay that failed, one line each.
std::vector<std::string> failing_checks(const PipelineRecord& p) {
  std::vector<std::string> out;
  if (!p.replay) return out;
  for (const auto& r : p.replay->ranks) {
    if (!r.error.empty()) out.push_back(fmt::format("rank {}: {}", r.rank, r.error));
    for (const auto* list : {&r.outputs, &r.gradients})
      for (const auto& c : *list)
        if (!c.pass)
          out.push_back(fmt::format("rank {} {}: max abs {:.3e}, max rel {:.3e} > tolerance {:.0e}", r.rank, c.name,
                                    c.max_abs, c.max_rel, c.tolerance));
    if (!r.first_non_finite.empty()) out.push_back(fmt::format("rank {}: first NaN/Inf at {}", r.rank, r.first_non_finite));
  }
  return out;
}

}  // namespace

std::string PipelineVerdict::line() const {
  return verdict == "refused" || verdict == "failed" ? verdict : verdict + " (vs " + against + ")";
}

std::string error_with_rule(const PipelineRecord& p) {
  bool named = p.rule.empty() || p.error.find(p.rule) != std::string::npos;
  return named ? p.error : p.error + " [rule " + p.rule + "]";
}

const Comparison* comparison_for(const Capture& c, int index) {
  for (const auto& cmp : c.comparisons)
    if (cmp.right == index) return &cmp;
  return nullptr;
}

PipelineVerdict pipeline_verdict(const Capture& c, int index) {
  const auto& p = c.pipelines.at(index);
  PipelineVerdict v;
  const auto* cmp = comparison_for(c, index);
  v.against = cmp ? c.pipelines.at(cmp->left).spec.label() : "eager";
  if (!p.error.empty()) {
    v.ok = false;
    v.verdict = p.rule.empty() || p.spec.capture_at_jit ? "failed" : "refused";
    v.reasons.push_back(error_with_rule(p));
    return v;
  }
  v.reasons = failing_checks(p);
  if (!cmp) {
    v.ok = v.reasons.empty();
    v.verdict = v.ok ? "pass" : "FAIL";
    return v;
  }
  v.verdict = cmp->verdict;
  v.ok = cmp->verdict == "equivalent";
  const auto& left = c.pipelines.at(cmp->left);
  if (!left.error.empty()) v.reasons.push_back("[" + left.spec.label() + "] failed: " + left.error);
  for (auto kind : kTraceKinds) {
    auto a = left.stages.last(kind), b = p.stages.last(kind);
    if (bool(a) != bool(b) || (a && !canonically_equal(*a, *b)))
      v.reasons.push_back(fmt::format("final {} trace differs from [{}]", trace_kind_name(kind), left.spec.label()));
  }
  if (!v.ok && v.reasons.empty()) v.reasons.push_back("numbers differ from [" + left.spec.label() + "]");
  return v;
}

}  // namespace tv::cli
