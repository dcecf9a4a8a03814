// Renderings of a composition-rules matrix: what `thunder-viz rules` prints, docs/composition-rules.md
// and the JSON of `--format json`.
// Contract: deterministic (no timings): the same matrix gives the same text.
#pragma once
#include <string>

#include "record/rules_matrix.h"

namespace tv {

std::string rules_text(const RulesMatrix&);
std::string rules_markdown(const RulesMatrix&);
std::string rules_json(const RulesMatrix&);

}  // namespace tv
