#include "rules/compute.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "transforms/order.h"

namespace tv {
namespace {

std::vector<std::string> with_jit(std::vector<std::string> order) {
  if (std::find(order.begin(), order.end(), "jit") == order.end()) order.push_back("jit");
  return order;
}

std::string joined(const std::vector<std::string>& v, const char* sep = ",") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

RuleCell classify(const RulesRequest& request, std::vector<std::string> order, std::vector<std::string> versus,
                  bool capture_at_jit) {
  RuleCell cell;
  cell.order = order;
  cell.versus = versus;
  cell.capture_at_jit = capture_at_jit;
  RunRequest run;
  run.model = request.model;
  run.params = request.params;
  run.launch = request.launch;
  run.gather_ranks = request.gather_ranks;
  for (const auto& o : {order, versus}) {
    PipelineSpec spec;
    spec.order = o;
    spec.world_size = request.world_size;
    spec.capture_at_jit = capture_at_jit;
    run.pipelines.push_back(spec);
  }
  auto capture = run_pipelines(run);
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
  size_t total = request.transforms.size() * request.transforms.size() + request.longer_orders.size() + 2, done = 0;
  auto step = [&](const std::string& what) {
    if (progress) progress(static_cast<double>(done++) / total, what);
  };
  for (const auto& a : request.transforms)
    for (const auto& b : request.transforms) {
      auto order = with_jit({a, b});
      auto versus = with_jit({b, a});
      step(joined(order) + " vs " + joined(versus));
      m.cells.push_back(classify(request, order, versus, false));
      m.cells.back().order = {a, b};  // the cell is named by the pair; `versus` keeps the full order run
    }
  for (const auto& order : request.longer_orders) {
    auto reversed = order;
    std::reverse(reversed.begin(), reversed.end());
    step(joined(order));
    m.cells.push_back(classify(request, order, reversed, false));
  }
  for (const auto& t : {"ddp", "fsdp"}) {
    step(std::string("capture-at-jit jit,") + t);
    m.cells.push_back(classify(request, {"jit", t}, {t, "jit"}, true));
  }
  for (const auto& c : m.cells) m.explanations[c.rule] = rule_explanation(c.rule);
  if (progress) progress(1.0, "done");
  return m;
}

namespace {

std::vector<const RuleCell*> extra_cells(const RulesMatrix& m) {
  std::vector<const RuleCell*> out;
  for (const auto& c : m.cells)
    if (c.order.size() != 2 || c.capture_at_jit) out.push_back(&c);
  return out;
}

}  // namespace

std::string rules_text(const RulesMatrix& m) {
  std::string out = fmt::format("Composition rules for {} on {} ranks (row applied first, then column):\n\n", m.model, m.world_size);
  out += fmt::format("{:<10}", "");
  for (const auto& t : m.transforms) out += fmt::format("{:<38}", t);
  out += "\n";
  for (const auto& a : m.transforms) {
    out += fmt::format("{:<10}", a);
    for (const auto& b : m.transforms) {
      auto* c = m.find({a, b});
      out += fmt::format("{:<38}", c ? c->label() : "?");
    }
    out += "\n";
  }
  out += "\nLonger orders and capture-at-jit:\n";
  for (const auto* c : extra_cells(m))
    out += fmt::format("  {:<32} vs {:<24} {}{}\n", joined(c->order) + (c->capture_at_jit ? " capture-at-jit" : ""),
                       joined(c->versus), c->label(), c->detail.empty() ? "" : " — " + c->detail);
  out += "\nRules:\n";
  for (const auto& [rule, text] : m.explanations) out += fmt::format("  {}: {}\n", rule, text);
  return out;
}

std::string rules_markdown(const RulesMatrix& m) {
  std::string out = "# Composition rules\n\n";
  out += fmt::format(
      "Generated by `thunder-viz rules --model {} --world {} --format markdown` (do not edit: "
      "`tests/scripts/check_rules_doc.sh` fails when this file is stale). Each cell runs the row's transform, then the "
      "column's (jit added last when neither is jit), against the reverse order, on {} gloo ranks, and compares the "
      "traces (canonical form, every stage) and the numbers (against LibTorch eager).\n\n",
      m.model, m.world_size, m.world_size);
  out += "| first \\ then |";
  for (const auto& t : m.transforms) out += " " + t + " |";
  out += "\n| --- |";
  for (size_t i = 0; i < m.transforms.size(); ++i) out += " --- |";
  out += "\n";
  for (const auto& a : m.transforms) {
    out += "| **" + a + "** |";
    for (const auto& b : m.transforms) {
      auto* c = m.find({a, b});
      out += " " + (c ? c->label() : std::string("?")) + " |";
    }
    out += "\n";
  }
  out += "\n## Longer orders and capture-at-jit\n\n| order | compared with | verdict | detail |\n| --- | --- | --- | --- |\n";
  for (const auto* c : extra_cells(m))
    out += fmt::format("| {}{} | {} | {} | {} |\n", joined(c->order), c->capture_at_jit ? " (capture-at-jit)" : "",
                       joined(c->versus), c->label(), c->detail);
  out += "\n## Rules\n\n";
  for (const auto& [rule, text] : m.explanations) out += "- **" + rule + "**: " + text + "\n";
  return out;
}

std::string rules_json(const RulesMatrix& m) {
  nlohmann::json j;
  j["model"] = m.model;
  j["world_size"] = m.world_size;
  j["transforms"] = m.transforms;
  for (const auto& c : m.cells)
    j["cells"].push_back({{"order", c.order}, {"versus", c.versus}, {"capture_at_jit", c.capture_at_jit},
                          {"verdict", std::string(verdict_name(c.verdict))}, {"outcome", std::string(outcome_name(c.outcome))}, {"rule", c.rule}, {"detail", c.detail}});
  j["explanations"] = m.explanations;
  return j.dump(2);
}

}  // namespace tv
