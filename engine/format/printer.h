// Printer: writes a Trace in Lightning Thunder's textual format.
// Contract: the output is what `str(trace)` (depth = all) or `trace.python()` (depth = 0) prints
// in Thunder: provenance line, imports, decorators, signature, one statement per line with its
// subsymbols as comments two spaces deeper per level, no trailing newline. parse(print(t)) gives
// back a trace that prints identically.
#pragma once
#include <string>
#include <vector>

#include "ir/trace.h"

namespace tv {

// Tag of a `return` statement whose tuple is written without parentheses (`return a, b`).
inline constexpr const char* kBareTupleTag = "bare-tuple";

struct PrintOptions {
  static constexpr int kAllLevels = 1 << 20;
  int depth = kAllLevels;  // subsymbol levels to print; 0 prints the top level only
  bool headers = true;     // source-location comments
  bool provenance = true;  // the "# Constructed by" line
  // When set, filled with the bound symbol (at any level) each printed line states, one entry per
  // line; null for the lines of no statement (provenance, signature, blank and header lines).
  std::vector<const BoundSymbol*>* line_owners = nullptr;
};

std::string print_trace(const Trace&, const PrintOptions& = {});
// One statement without indentation or comment prefix, e.g. `t0 = prims.add(a, b)  # t0: "cpu f32[2]"`.
std::string print_statement(const BoundSymbol&);
void append_statement(std::string& out, const BoundSymbol&);  // print_statement appended to `out`
// The lines of one bound symbol as they appear in a trace body (with subsymbols to `depth`).
std::string print_bound_symbol(const BoundSymbol&, int depth = PrintOptions::kAllLevels);

}  // namespace tv
