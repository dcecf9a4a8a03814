// Source locations: the line of the user's program (or of the zoo's model definition) a bound
// symbol came from, written as Thunder prints it above a statement: "file:line: \t<code>", or
// "file:line" when the code is not known.
// Contract: a location is one shared, immutable string, so copies of a BoundSymbol share it; null
// means none; two locations are the same when their texts are (same_source).
// The builder gives every statement it records the current location, at every level; a pass that
// makes a statement from another copies it; a subsymbol without one has its parent's. A printed
// trace keeps only the headers, and a reader infers the rest (implied_sources), so captures store
// the statements where that inference is wrong (capture/encode.cpp).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/shared.h"

namespace tv {

struct Trace;

using SourceRef = Shared<std::string>;

// A location holding `location`; null for "".
SourceRef make_source(std::string_view location);
bool same_source(const SourceRef& a, const SourceRef& b);

// A location split into its parts. Two locations name the same line when file and line agree (the
// code text may differ between printouts of one program).
struct SourceLine {
  std::string file;
  int line = 0;
  std::string code;  // as printed, leading indentation kept; "" when the location has none
  bool same_line(const SourceLine& o) const { return line == o.line && file == o.file; }
};

// "file:line" or "file:line: \t<code>"; nullopt when the text names no line (a free comment).
std::optional<SourceLine> source_line(std::string_view location);

// The sources a reader of the printed trace infers from its headers, in walk order (every level,
// subsymbols after their parent): a top-level statement's header, or else the source of the
// statement before it; none for the function's structure (inputs, unpacks, del, return);
// a subsymbol has its parent's.
std::vector<SourceRef> implied_sources(const Trace&);
// Each statement's own source or, where it has none, its parent's; walk order.
std::vector<SourceRef> effective_sources(const Trace&);
// Sets every statement's source, at every level, from `sources` (walk order). Throws
// std::out_of_range when the list is shorter than the trace's statements.
void set_sources(Trace&, const std::vector<SourceRef>& sources);

}  // namespace tv
