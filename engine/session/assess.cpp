#include "session/assess.h"

#include <fmt/format.h>

#include <cmath>
#include <tuple>

#include "canonical/canonical.h"
#include "record/rank_table.h"
#include "transforms/order.h"

namespace tv {
namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string error_with_rule(const PipelineRecord& p) {
  bool named = p.rule.empty() || p.error.find(p.rule) != std::string::npos;
  return named ? p.error : p.error + " [rule " + p.rule + "]";
}

// The checks of a replay that failed, one line each.
std::vector<std::string> failing_checks(const Replay& replay) {
  std::vector<std::string> out;
  for (const auto& r : replay.ranks) {
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

bool has_rank_error(const PipelineRecord& p) {
  if (p.replay)
    for (const auto& r : p.replay->ranks)
      if (!r.error.empty()) return true;
  return false;
}

// Why `p` has no program to compare, or "" when it has one.
std::string not_comparable_because(const Capture& c, int index) {
  const auto& p = c.pipelines[index];
  if (!p.error.empty() || has_rank_error(p))
    return pipeline_name(c, index) + " " + std::string(outcome_name(p.outcome.kind)) +
           (p.outcome.reasons.empty() ? "" : ": " + first_line(p.outcome.reasons.front()));
  return "";
}

void compare_numbers(const PipelineRecord& a, const PipelineRecord& b, Comparison& out) {
  out.numbers_equal = true;
  if (!a.replay || !b.replay) return;
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

}  // namespace

std::string pipeline_name(const Capture& c, int index) {
  if (index < 0 || index >= static_cast<int>(c.pipelines.size())) return fmt::format("P{}", index);
  return fmt::format("P{} [{}]", index, c.pipelines[index].spec.label());
}

PipelineOutcome assess_pipeline(const PipelineRecord& p) {
  PipelineOutcome out;
  out.rule = p.rule;
  if (!p.error.empty()) {
    // A composition rule refuses before anything is built; state read at the wrong time fails
    // while building (the failed stage is kept).
    bool refused = !p.rule.empty() && p.rule != rule::kStateReadAtCall;
    out.kind = refused ? Outcome::refused : Outcome::failed;
    out.reasons.push_back(error_with_rule(p));
    return out;
  }
  if (p.replay) out.reasons = failing_checks(*p.replay);
  if (p.replay && p.replay->ranks.size() > 1 && out.reasons.empty()) {
    // Every rank passed its own checks; a value they must share may still differ between them.
    RankTable ranks = rank_table(p.stages, *p.replay);
    if (ranks.first_ranks_part) out.reasons.push_back(ranks.describe_ranks());
  }
  out.kind = out.reasons.empty() ? Outcome::passed : Outcome::failed;
  return out;
}

Comparison compare_pipelines(const Capture& c, int left, int right) {
  Comparison out;
  out.left = left;
  out.right = right;
  const auto& a = c.pipelines.at(left);
  const auto& b = c.pipelines.at(right);
  for (int side : {left, right})
    if (auto why = not_comparable_because(c, side); !why.empty()) {
      std::tie(out.verdict, out.why) = conclude({}, why);
      return out;
    }
  out.stages = compare_stages(a.stages, b.stages);
  out.traces_equal = true;
  std::vector<std::string> differs;
  for (auto kind : kTraceKinds) {
    auto fa = a.stages.last(kind), fb = b.stages.last(kind);
    if (bool(fa) != bool(fb) || (fa && !canonically_equal(*fa, *fb))) {
      out.traces_equal = false;
      differs.push_back(fmt::format("final {} trace", trace_kind_name(kind)));
    }
  }
  compare_numbers(a, b, out);
  if (!out.numbers_equal) {
    std::string sides;
    for (int side : {left, right})
      if (!c.pipelines[side].outcome.ok()) sides += (sides.empty() ? "" : ", ") + pipeline_name(c, side);
    differs.push_back(sides.empty() ? std::string("numbers") : "numbers (" + sides + " off from eager)");
  }
  std::tie(out.verdict, out.why) = conclude(differs);
  if (out.verdict == Verdict::equivalent && (!a.replay || !b.replay))  // nothing was run: say what was compared
    out.why = "canonically equal traces at every stage; numbers not compared (" +
              std::string(!a.replay && !b.replay ? "neither side was" : "one side was not") + " replayed)";
  return out;
}

std::pair<Verdict, std::string> conclude(const std::vector<std::string>& differs, const std::string& not_comparable_because) {
  if (!not_comparable_because.empty()) return {Verdict::not_comparable, not_comparable_because};
  if (differs.empty()) return {Verdict::equivalent, std::string(verdict_meaning(Verdict::equivalent))};
  std::string why;
  for (const auto& d : differs) why += (why.empty() ? "" : ", ") + d;
  return {Verdict::different, why + " differ"};
}

void assess(Capture& c) {
  for (auto& p : c.pipelines) p.outcome = assess_pipeline(p);
  for (auto& cmp : c.comparisons) {
    if (cmp.left < 0 || cmp.right < 0 || cmp.left >= static_cast<int>(c.pipelines.size()) ||
        cmp.right >= static_cast<int>(c.pipelines.size()))
      continue;
    cmp = compare_pipelines(c, cmp.left, cmp.right);
  }
}

std::string comparison_line(const Capture& c, const Comparison& cmp) {
  return fmt::format("{} vs {}: {}: {}", pipeline_name(c, cmp.right), pipeline_name(c, cmp.left), verdict_name(cmp.verdict),
                     cmp.why);
}

const Comparison* comparison_of(const Capture& c, int index) {
  for (const auto& cmp : c.comparisons)
    if (cmp.right == index) return &cmp;
  return nullptr;
}

std::string pipeline_line(const Capture& c, int index) {
  std::string out = c.pipelines.at(index).outcome.line();
  if (const auto* cmp = comparison_of(c, index))
    out += fmt::format("; vs {}: {}", pipeline_name(c, cmp->left), verdict_name(cmp->verdict));
  return out;
}

bool pipeline_ok(const Capture& c, int index, std::vector<std::string>* reasons) {
  const auto& outcome = c.pipelines.at(index).outcome;
  const auto* cmp = comparison_of(c, index);
  bool ok = outcome.ok() && (!cmp || cmp->verdict == Verdict::equivalent);
  if (reasons) {
    reasons->insert(reasons->end(), outcome.reasons.begin(), outcome.reasons.end());
    if (cmp && cmp->verdict != Verdict::equivalent)
      reasons->push_back(fmt::format("{} vs {}: {}", verdict_name(cmp->verdict), pipeline_name(c, cmp->left), cmp->why));
  }
  return ok;
}

}  // namespace tv
