#include "ir/source_location.h"

#include <cctype>
#include <stdexcept>

#include "ir/trace.h"

namespace tv {

SourceRef make_source(std::string_view location) {
  return location.empty() ? nullptr : SourceRef::make(location);
}

bool same_source(const SourceRef& a, const SourceRef& b) { return a == b || (a && b && *a == *b); }

std::optional<SourceLine> source_line(std::string_view location) {
  // The first ":<digits>" followed by ':' or the end; a path may hold ':' before it only as a drive.
  for (size_t colon = location.find(':'); colon != std::string_view::npos; colon = location.find(':', colon + 1)) {
    size_t end = colon + 1;
    while (end < location.size() && std::isdigit(static_cast<unsigned char>(location[end]))) ++end;
    if (end == colon + 1 || end - colon > 10 || colon == 0) continue;
    if (end < location.size() && location[end] != ':') continue;
    SourceLine out;
    out.file = std::string(location.substr(0, colon));
    out.line = std::stoi(std::string(location.substr(colon + 1, end - colon - 1)));
    if (end < location.size()) {
      std::string_view code = location.substr(end + 1);
      if (!code.empty() && code.front() == ' ') code.remove_prefix(1);
      if (!code.empty() && code.front() == '\t') code.remove_prefix(1);
      out.code = std::string(code);
    }
    return out;
  }
  return std::nullopt;
}

namespace {

void implied_level(const std::vector<BoundSymbol>& body, SourceRef parent, bool top, SourceRef& previous,
                   std::vector<SourceRef>& out) {
  for (const auto& b : body) {
    SourceRef own = parent;
    if (top) {
      if (is_structural(b)) {
        own = nullptr;
      } else {
        if (b.header && !b.header->empty() && !same_source(previous, b.header)) previous = b.header;
        own = previous;
      }
    }
    out.push_back(own);
    SourceRef unused;
    implied_level(b.subsymbols, own, false, unused, out);
  }
}

void effective_level(const std::vector<BoundSymbol>& body, SourceRef parent, std::vector<SourceRef>& out) {
  for (const auto& b : body) {
    SourceRef own = b.source ? b.source : parent;
    out.push_back(own);
    effective_level(b.subsymbols, own, out);
  }
}

void set_level(std::vector<BoundSymbol>& body, const std::vector<SourceRef>& sources, size_t& next) {
  for (auto& b : body) {
    if (next >= sources.size())
      throw std::out_of_range("the trace has more statements than the " + std::to_string(sources.size()) +
                              " sources given");
    b.source = sources[next++];
    if (!b.subsymbols.empty()) set_level(b.subsymbols.mutable_vec(), sources, next);
  }
}

}  // namespace

std::vector<SourceRef> implied_sources(const Trace& t) {
  std::vector<SourceRef> out;
  SourceRef previous = nullptr;
  implied_level(t.body, nullptr, true, previous, out);
  return out;
}

std::vector<SourceRef> effective_sources(const Trace& t) {
  std::vector<SourceRef> out;
  effective_level(t.body, nullptr, out);
  return out;
}

void set_sources(Trace& t, const std::vector<SourceRef>& sources) {
  size_t next = 0;
  set_level(t.body, sources, next);
}

}  // namespace tv
