#include "rules/matrix.h"

namespace tv {

std::string_view composition_name(Composition c) {
  switch (c) {
    case Composition::equivalent: return "equivalent";
    case Composition::different: return "different";
    case Composition::illegal: return "illegal";
    case Composition::failed: return "failed";
  }
  return "failed";
}

const RuleCell* RulesMatrix::find(const std::vector<std::string>& order, bool capture_at_jit) const {
  for (const auto& c : cells)
    if (c.order == order && c.capture_at_jit == capture_at_jit) return &c;
  return nullptr;
}

}  // namespace tv
