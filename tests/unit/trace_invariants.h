// What every trace, parsed or built, keeps and the passes rely on, as lists of the breaches
// (empty when it holds), for the tests to check over Thunder's printouts and every pipeline stage.
#pragma once
#include <string>
#include <unordered_set>
#include <vector>

#include "ir/trace.h"

namespace tv::testing {

// Names a statement reads, at any level, that neither a parameter nor an output at any level
// defines. Names Thunder reads without defining (`_DistributedReduceOps_SUM_0`) are names, not
// proxies, so a trace that holds this has its every proxy name among its parameters and outputs:
// a builder that reserves those (collectives::reserve_names) never hands out a name in use.
inline std::vector<std::string> names_read_but_never_defined(const Trace& t) {
  std::unordered_set<std::string> defined;
  for (const auto& p : t.params) defined.insert(p.proxy->name);
  walk(t.body, [&](const BoundSymbol& b, int) {
    for (const auto& o : b.outputs) defined.insert(o->name);
  });
  std::vector<std::string> out;
  walk(t.body, [&](const BoundSymbol& b, int) {
    for (const auto& p : b.inputs())
      if (!defined.count(p->name)) out.push_back(b.name() + " reads " + p->name);
  });
  return out;
}

namespace detail {
inline void reads_from_outside(const BoundSymbol& b, std::vector<std::string>& out) {
  if (b.subsymbols.empty()) return;
  std::unordered_set<std::string> allowed;
  for (const auto& p : b.inputs()) allowed.insert(p->name);
  walk(b.subsymbols, [&](const BoundSymbol& s, int) {
    for (const auto& o : s.outputs) allowed.insert(o->name);
  });
  for (const auto& s : b.subsymbols) {
    for (const auto& p : s.inputs())
      if (!allowed.count(p->name))
        out.push_back(s.name() + " under " + b.name() + (b.outputs.empty() ? "" : " (" + b.outputs[0]->name + ")") +
                      " reads " + p->name);
    reads_from_outside(s, out);
  }
}
}  // namespace detail

// Reads of a subsymbol that its parent neither reads nor defines below itself: a decomposition
// reads only what its statement reads, so a pass that rewrites a statement's reads only where the
// statement itself reads a rewritten name (CSE) leaves no decomposition reading a stale one.
inline std::vector<std::string> decompositions_reading_outside(const Trace& t) {
  std::vector<std::string> out;
  for (const auto& b : t.body) detail::reads_from_outside(b, out);
  return out;
}

}  // namespace tv::testing
