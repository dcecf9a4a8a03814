#include "record/rules_matrix.h"

namespace tv {

std::string_view RuleCell::word() const {
  return verdict == Verdict::not_comparable ? outcome_name(outcome) : verdict_name(verdict);
}

std::string RuleCell::label() const {
  if (verdict != Verdict::not_comparable) return std::string(verdict_name(verdict));
  std::string out(word());
  return rule.empty() || rule == "run-failed" ? out : out + ": " + rule;
}

const RuleCell* RulesMatrix::find(const std::vector<std::string>& order, const std::string& semantics) const {
  for (const auto& c : cells)
    if (c.order == order && c.semantics == semantics) return &c;
  return nullptr;
}

}  // namespace tv
