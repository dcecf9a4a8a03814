#include "rules/compute.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "transforms/hsdp.h"
#include "transforms/order.h"
#include "transforms/semantics.h"

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
        step(mode + ": " + joined(order) + " vs " + joined(versus));
        m.cells.push_back(classify(request, order, versus, mode));
        m.cells.back().order = {a, b};  // the cell is named by the pair; `versus` keeps the full order run
      }
    for (const auto& order : request.longer_orders) {
      auto reversed = order;
      std::reverse(reversed.begin(), reversed.end());
      step(mode + ": " + joined(order));
      m.cells.push_back(classify(request, order, reversed, mode));
    }
  }
  for (const auto& c : m.cells) m.explanations[c.rule] = rule_explanation(c.rule);
  if (progress) progress(1.0, "done");
  return m;
}

namespace {

// The longer orders computed in `mode`.
std::vector<const RuleCell*> longer_cells(const RulesMatrix& m, const std::string& mode) {
  std::vector<const RuleCell*> out;
  for (const auto& c : m.cells)
    if (c.order.size() != 2 && c.semantics == mode) out.push_back(&c);
  return out;
}

// A cell's label and, when a side stopped the comparison, which side: "failed: state-read-at-call
// [jit,ddp thunder-2024-03]".
std::string cell_text(const RuleCell* c) {
  if (!c) return "?";
  if (c->verdict != Verdict::not_comparable || c->detail.rfind('[', 0) != 0) return c->label();
  return c->label() + " " + c->detail.substr(0, c->detail.find(']') + 1);
}

// The ordered pairs whose cells differ between the modes computed.
std::vector<std::pair<std::string, std::string>> pairs_that_differ(const RulesMatrix& m) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& a : m.transforms)
    for (const auto& b : m.transforms) {
      const RuleCell* first = m.find({a, b}, m.semantics.front());
      for (const auto& mode : m.semantics) {
        const RuleCell* c = m.find({a, b}, mode);
        if (c && first && c->label() != first->label()) {
          out.emplace_back(a, b);
          break;
        }
      }
    }
  return out;
}

std::string matrix_text(const RulesMatrix& m, const std::string& mode) {
  std::string out = fmt::format("{:<10}", "");
  for (const auto& t : m.transforms) out += fmt::format("{:<38}", t);
  out += "\n";
  for (const auto& a : m.transforms) {
    out += fmt::format("{:<10}", a);
    for (const auto& b : m.transforms) {
      auto* c = m.find({a, b}, mode);
      out += fmt::format("{:<38}", c ? c->label() : "?");
    }
    out += "\n";
  }
  return out;
}

std::string matrix_markdown(const RulesMatrix& m, const std::string& mode) {
  std::string out = "| first \\ then |";
  for (const auto& t : m.transforms) out += " " + t + " |";
  out += "\n| --- |";
  for (size_t i = 0; i < m.transforms.size(); ++i) out += " --- |";
  out += "\n";
  for (const auto& a : m.transforms) {
    out += "| **" + a + "** |";
    for (const auto& b : m.transforms) {
      auto* c = m.find({a, b}, mode);
      out += " " + (c ? c->label() : std::string("?")) + " |";
    }
    out += "\n";
  }
  return out;
}

std::string mode_description(const std::string& mode) {
  try {
    return std::string(find_semantics(mode).description);
  } catch (const std::invalid_argument&) {
    return "";
  }
}

}  // namespace

std::string rules_text(const RulesMatrix& m) {
  std::string out = fmt::format("Composition rules for {} on {} ranks (row applied first, then column):\n", m.model, m.world_size);
  for (const auto& mode : m.semantics) {
    out += fmt::format("\nSemantics {}: {}\n", mode, mode_description(mode));
    out += matrix_text(m, mode);
    for (const auto* c : longer_cells(m, mode))
      out += fmt::format("  {:<24} vs {:<24} {}{}\n", joined(c->order), joined(c->versus), c->label(),
                         c->detail.empty() ? "" : " — " + c->detail);
  }
  if (m.semantics.size() > 1) {
    out += "\nPairs that differ between the modes:\n";
    for (const auto& [a, b] : pairs_that_differ(m)) {
      out += fmt::format("  {:<16}", a + "," + b);
      for (const auto& mode : m.semantics) out += fmt::format(" {}: {};", mode, cell_text(m.find({a, b}, mode)));
      out += "\n";
    }
  }
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
      "traces (canonical form, every stage) and the numbers (against LibTorch eager). It is computed once per "
      "semantics mode (`--semantics`): which transform reads module state when.\n",
      m.model, m.world_size, m.world_size);
  if (std::find(m.transforms.begin(), m.transforms.end(), "hsdp") != m.transforms.end()) {
    auto mesh = hybrid_mesh(m.world_size, 0);
    out += fmt::format(
        "hsdp runs on its default mesh: {} shard groups of {} ranks (fsdp within each group, ddp across them).\n",
        mesh.replicas, mesh.shards);
  }
  if (m.semantics.size() > 1) {
    out += "\n## The semantics modes side by side\n\nWho reads `process_group_for_ddp` when:\n\n| reader |";
    for (const auto& mode : m.semantics) out += " " + mode + " |";
    out += "\n| --- |";
    for (size_t i = 0; i < m.semantics.size(); ++i) out += " --- |";
    out += "\n";
    for (auto consumer : kStateConsumers) {
      out += "| " + std::string(consumer_name(consumer)) + " |";
      for (const auto& mode : m.semantics) out += " " + std::string(read_at_name(find_semantics(mode).reads(consumer))) + " |";
      out += "\n";
    }
    out += "| ddp, fsdp given a module that is not jitted |";
    for (const auto& mode : m.semantics)
      out += find_semantics(mode).distributors_need_jitted_module ? std::string(" refused |") : std::string(" accepted |");
    out += "\n\nThe pairs whose cells differ between the modes (every other pair is the same in every mode):\n\n| first, then |";
    for (const auto& mode : m.semantics) out += " " + mode + " |";
    out += "\n| --- |";
    for (size_t i = 0; i < m.semantics.size(); ++i) out += " --- |";
    out += "\n";
    for (const auto& [a, b] : pairs_that_differ(m)) {
      out += "| " + a + ", " + b + " |";
      for (const auto& mode : m.semantics) out += " " + cell_text(m.find({a, b}, mode)) + " |";
      out += "\n";
    }
  }
  for (const auto& mode : m.semantics) {
    out += fmt::format("\n## Semantics {}\n\n{}.\n\n", mode, mode_description(mode));
    out += matrix_markdown(m, mode);
    auto longer = longer_cells(m, mode);
    if (longer.empty()) continue;
    out += "\n| longer order | compared with | verdict | detail |\n| --- | --- | --- | --- |\n";
    for (const auto* c : longer)
      out += fmt::format("| {} | {} | {} | {} |\n", joined(c->order), joined(c->versus), c->label(), c->detail);
  }
  out += "\n## Rules\n\n";
  for (const auto& [rule, text] : m.explanations) out += "- **" + rule + "**: " + text + "\n";
  return out;
}

std::string rules_json(const RulesMatrix& m) {
  nlohmann::json j;
  j["model"] = m.model;
  j["world_size"] = m.world_size;
  j["transforms"] = m.transforms;
  j["semantics"] = m.semantics;
  for (const auto& c : m.cells)
    j["cells"].push_back({{"order", c.order}, {"versus", c.versus}, {"semantics", c.semantics},
                          {"verdict", std::string(verdict_name(c.verdict))}, {"outcome", std::string(outcome_name(c.outcome))}, {"rule", c.rule}, {"detail", c.detail}});
  j["explanations"] = m.explanations;
  return j.dump(2);
}

}  // namespace tv
