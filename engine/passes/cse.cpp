#include "passes/cse.h"

#include <cstdint>
#include <string>
#include <unordered_map>

#include "passes/delete_last_used.h"
#include "passes/pass_util.h"

namespace tv::passes {
namespace {

using Replacements = std::unordered_map<std::string, ProxyPtr>;

ProxyPtr replace(const Replacements& r, const ProxyPtr& p) {
  auto it = r.find(p->name);
  return it == r.end() ? p : it->second;
}

// A decomposition reads only what its statement reads or defines below itself, so a statement
// whose own arguments read nothing replaced has no subsymbol that does: its subsymbols are not
// walked (a deep trace's are most of its data).
bool reads_any(const BoundSymbol& b, const Replacements& r) {
  bool found = false;
  auto check = [&](const ProxyPtr& p) { found = found || r.count(p->name) > 0; };
  for (const auto& a : b.args) for_each_proxy(a, check);
  for (const auto& [k, v] : b.kwargs) for_each_proxy(v, check);
  return found;
}

// Rewrites the reads of `b` and of its subsymbols (outputs stay). A statement that reads nothing
// replaced is left as it is, so its subsymbols stay shared with the trace it was copied from.
void substitute(BoundSymbol& b, const Replacements& r) {
  if (r.empty() || !reads_any(b, r)) return;
  auto fn = [&](const ProxyPtr& p) { return replace(r, p); };
  for (auto& a : b.args) a = map_proxies(a, fn);
  for (auto& [k, v] : b.kwargs) v = map_proxies(v, fn);
  for (auto& s : b.subsymbols) substitute(s, r);
}

bool mergeable(const BoundSymbol& b) {
  if (b.outputs.empty() || b.symbol->form != PrintForm::call) return false;
  return !has_trait(b, "random") && !has_trait(b, "collective") && !has_trait(b, "check") &&
         !has_trait(b, "effect") && !has_trait(b, "structural");
}

std::string key_of(const BoundSymbol& b) {
  std::string key = b.symbol->name + "@" + std::to_string(reinterpret_cast<uintptr_t>(b.symbol)) + "(";
  for (const auto& a : b.args) key += python_text(a) + ", ";
  for (const auto& [k, v] : b.kwargs) key += k + "=" + python_text(v) + ", ";
  return key + ")/" + std::to_string(b.outputs.size());
}

}  // namespace

TracePtr common_subexpression_elimination(const Trace& t) {
  PassTimer timer;
  auto out = derive_regrouped(t, "Common Subexpression Elimination", [](std::vector<BoundSymbol> original) {
    Replacements redundant;
    std::unordered_map<std::string, std::vector<ProxyPtr>> seen;  // key -> outputs of the representative
    std::vector<BoundSymbol> body;
    for (auto& b : original) {
      substitute(b, redundant);
      if (mergeable(b)) {
        auto key = key_of(b);
        auto it = seen.find(key);
        if (it != seen.end()) {
          const auto& rep_outputs = it->second;
          for (size_t i = 0; i < b.outputs.size(); ++i)
            if (b.outputs[i]->name != rep_outputs[i]->name) redundant[b.outputs[i]->name] = rep_outputs[i];
          continue;
        }
        seen.emplace(key, b.outputs);
      }
      body.push_back(std::move(b));
    }
    return body;
  });
  return timer.finish(out, "Common Subexpression Elimination");
}

}  // namespace tv::passes
