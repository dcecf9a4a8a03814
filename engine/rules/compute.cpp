#include "rules/compute.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "transforms/order.h"
#include "transforms/semantics.h"

namespace tv {
namespace {

std::vector<std::string> with_jit(std::vector<std::string> order) {
  if (std::find(order.begin(), order.end(), "jit") == order.end()) order.push_back("jit");
  return order;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

bool has_rank_error(const Capture& c) {
  for (const auto& p : c.pipelines)
    if (p.replay)
      for (const auto& r : p.replay->ranks)
        if (!r.error.empty()) return true;
  return false;
}

RuleCell classify(const RulesRequest& request, std::vector<std::string> order, std::vector<std::string> versus,
                  const std::string& semantics) {
  RuleCell cell;
  cell.order = order;
  cell.versus = versus;
  cell.semantics = semantics;
  RunRequest run;
  run.model = request.model;
  run.params = request.params;
  run.launch = request.launch;
  run.gather_ranks = request.gather_ranks;
  for (const auto& o : {order, versus}) {
    PipelineSpec spec;
    spec.order = o;
    spec.world_size = request.world_size;
    spec.semantics = semantics;
    run.pipelines.push_back(spec);
  }
  auto capture = run_pipelines(run);
  // A rank's error (gloo's loopback connect fails now and then on a loaded machine) says nothing
  // of how the orders compose: such a run is made once more before the cell records it. Not under
  // a launch: there only rank 0 sees every rank's errors, and every process must make the same runs.
  if (!request.launch && has_rank_error(capture)) capture = run_pipelines(run);
  const auto& cmp = capture.comparisons.front();
  cell.verdict = cmp.verdict;
  cell.detail = cmp.why;
  switch (cmp.verdict) {
    case Verdict::equivalent: cell.rule = rule::kOrderIndependentHooks; break;
    case Verdict::different: {
      cell.rule = rule::kOrderDependent;
      std::string kinds;
      for (const auto& s : cmp.stages)
        if (!s.equal && kinds.find(s.kind) == std::string::npos) kinds += (kinds.empty() ? "" : ", ") + s.kind;
      cell.detail = "traces differ in: " + (kinds.empty() ? std::string("none (numbers differ)") : kinds);
      break;
    }
    case Verdict::not_comparable:
      for (const auto& p : capture.pipelines)
        if (!p.outcome.ok()) {
          cell.outcome = p.outcome.kind;
          cell.rule = p.rule.empty() ? std::string(rule::kRunFailed) : p.rule;
          cell.detail = "[" + p.spec.label() + "] " + first_line(p.outcome.reasons.empty() ? p.error : p.outcome.reasons.front());
          break;
        }
      break;
  }
  return cell;
}

}  // namespace

std::string rule_explanation(const std::string& name) {
  const auto* r = find_composition_rule(name);
  return r ? std::string(r->explanation) : std::string();
}

RulesMatrix compute_rules(const RulesRequest& request, const ProgressFn& progress) {
  RulesMatrix m;
  m.model = request.model;
  m.world_size = request.world_size;
  m.transforms = request.transforms;
  m.semantics = request.semantics.empty() ? semantics_names() : request.semantics;
  for (const auto& mode : m.semantics) find_semantics(mode);  // throws std::invalid_argument
  size_t total = (request.transforms.size() * request.transforms.size() + request.longer_orders.size()) * m.semantics.size();
  size_t done = 0;
  auto step = [&](const std::string& what) {
    if (progress) progress(static_cast<double>(done++) / total, what);
  };
  for (const auto& mode : m.semantics) {
    for (const auto& a : request.transforms)
      for (const auto& b : request.transforms) {
        auto order = with_jit({a, b});
        auto versus = with_jit({b, a});
        step(mode + ": " + fmt::format("{}", fmt::join(order, ",")) + " vs " + fmt::format("{}", fmt::join(versus, ",")));
        m.cells.push_back(classify(request, order, versus, mode));
        m.cells.back().order = {a, b};  // the cell is named by the pair; `versus` keeps the full order run
      }
    for (const auto& order : request.longer_orders) {
      auto reversed = order;
      std::reverse(reversed.begin(), reversed.end());
      step(mode + ": " + fmt::format("{}", fmt::join(order, ",")));
      m.cells.push_back(classify(request, order, reversed, mode));
    }
  }
  for (const auto& c : m.cells) m.explanations[c.rule] = rule_explanation(c.rule);
  if (progress) progress(1.0, "done");
  return m;
}

}  // namespace tv
