// The composition-rules matrix: how ordered pairs (and chosen longer orders) of transforms compose.
// Contract: plain data. A cell is computed by running both orders on a model, never written by
// hand, and holds the comparison's Verdict (record/verdict.h): `equivalent` (canonically equal
// traces and equal numbers), `different` (legal, with the diff summary), or `not comparable`, with
// the outcome of the side that stopped it: `refused` (with the rule's name and the fix) or
// `failed` (a run broke).
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "record/verdict.h"

namespace tv {

struct RuleCell {
  std::vector<std::string> order;  // {"ddp", "jit"}: applied in this order
  std::vector<std::string> versus;  // the order it was compared with (the reverse of `order` for pairs)
  std::string semantics = "lazy";   // the semantics mode it was computed in
  Verdict verdict = Verdict::equivalent;
  Outcome outcome = Outcome::passed;  // not comparable: how the side that stopped it ended
  std::string rule;                // the rule's name, e.g. "one-parameter-distribution"
  std::string detail;              // the diff summary, the error, or why they are equivalent
  // One word: the verdict, or the outcome that made it not comparable ("refused", "failed").
  std::string_view word() const;
  // The word, with the rule for a refusal or a reproduced failure: "equivalent", "refused:
  // one-parameter-distribution", "failed: state-read-at-call", "failed" (a broken run).
  std::string label() const;
};

struct RulesMatrix {
  std::string model;
  int world_size = 1;
  std::vector<std::string> transforms;             // rows and columns
  std::vector<RuleCell> cells;                     // pairs first, then longer orders
  std::map<std::string, std::string> explanations;  // rule name -> short text
  std::vector<std::string> semantics;              // the modes computed, "lazy" first
  const RuleCell* find(const std::vector<std::string>& order, const std::string& semantics = "lazy") const;
};

}  // namespace tv
