// The composition-rules matrix: how ordered pairs (and chosen longer orders) of transforms compose.
// Contract: plain data. A cell is computed by running both orders on a model, never written by
// hand: `equivalent` (canonically equal traces and equal numbers), `different` (legal, with the
// diff summary), `illegal` (refused, with the rule's name and the fix), or `failed` (a run broke).
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tv {

enum class Composition { equivalent, different, illegal, failed };
std::string_view composition_name(Composition);

struct RuleCell {
  std::vector<std::string> order;  // {"ddp", "jit"}: applied in this order
  std::vector<std::string> versus;  // the order it was compared with (the reverse of `order` for pairs)
  bool capture_at_jit = false;      // computed in capture-at-jit mode
  Composition verdict = Composition::equivalent;
  std::string rule;                // the rule's name, e.g. "one-parameter-distribution"
  std::string detail;              // the diff summary, the error, or why they are equivalent
};

struct RulesMatrix {
  std::string model;
  int world_size = 1;
  std::vector<std::string> transforms;             // rows and columns
  std::vector<RuleCell> cells;                     // pairs first, then longer orders
  std::map<std::string, std::string> explanations;  // rule name -> short text
  const RuleCell* find(const std::vector<std::string>& order, bool capture_at_jit = false) const;
};

}  // namespace tv
