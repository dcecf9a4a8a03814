#include "transforms/source_provenance.h"

#include <functional>
#include <map>

namespace tv {

std::vector<SourceRef> statement_sources(const Trace& trace, const Trace* forward) {
  std::vector<SourceRef> out = effective_sources(trace);
  std::map<std::string, SourceRef> of_key;  // forward statement key -> its source
  if (forward) {
    const auto forward_sources = effective_sources(*forward);
    size_t index = 0;
    walk(forward->body, [&](const BoundSymbol& b, int) {
      if (!b.gradient_of.empty() && forward_sources[index]) of_key.emplace(b.gradient_of, forward_sources[index]);
      ++index;
    });
  }
  if (of_key.empty()) return out;
  // A statement without a source takes its forward statement's, or else its parent's (as resolved).
  size_t index = 0;
  std::function<void(const std::vector<BoundSymbol>&, const SourceRef&)> level =
      [&](const std::vector<BoundSymbol>& body, const SourceRef& parent) {
        for (const auto& b : body) {
          SourceRef& s = out[index++];
          if (!s && !b.gradient_of.empty())
            if (auto it = of_key.find(b.gradient_of); it != of_key.end()) s = it->second;
          if (!s) s = parent;
          level(b.subsymbols, s);
        }
      };
  level(trace.body, nullptr);
  return out;
}

SourceRef statement_source(const Trace& trace, const BoundSymbol& statement, const Trace* forward) {
  size_t index = 0, at = static_cast<size_t>(-1);
  walk(trace.body, [&](const BoundSymbol& b, int) {
    if (&b == &statement) at = index;
    ++index;
  });
  if (at == static_cast<size_t>(-1)) return nullptr;
  return statement_sources(trace, forward)[at];
}

std::vector<const BoundSymbol*> statements_from(const Trace& trace, const SourceLine& line, const Trace* forward) {
  const auto sources = statement_sources(trace, forward);
  std::vector<const BoundSymbol*> out;
  std::map<const std::string*, bool> matches;  // parsing each distinct location once
  size_t index = 0;
  walk(trace.body, [&](const BoundSymbol& b, int) {
    const SourceRef& s = sources[index++];
    if (!s) return;
    auto it = matches.find(s.get());
    if (it == matches.end()) {
      auto parsed = source_line(*s);
      it = matches.emplace(s.get(), parsed && parsed->same_line(line)).first;
    }
    if (it->second) out.push_back(&b);
  });
  return out;
}

}  // namespace tv
