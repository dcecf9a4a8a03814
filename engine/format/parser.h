// Parser: reads Lightning Thunder's textual trace format back into a Trace.
// Contract: never throws and never hangs on any input; a malformed text gives a ParseError with a
// 1-based line and column and a message saying what was expected. A text without a final
// `return` (a cut-off printout), a name read before the statement that defines it and a name read
// that nothing defines (import lines' names and Thunder's `_`-prefixed context objects excepted)
// are errors.
// Messages show the input's control bytes as \xNN.
// Unknown symbols become opaque symbols. What the printer writes parses back to a trace that
// prints identically; a Thunder printout reprints identically except for the normalisations
// listed in docs/trace-format.md.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "ir/trace.h"

namespace tv {

struct ParseError {
  int line = 0;
  int column = 0;
  std::string message;

  // "FILE:LINE:COL: message"
  std::string describe(std::string_view file) const;
};

struct ParseResult {
  TracePtr trace;
  std::optional<ParseError> error;
  explicit operator bool() const { return trace != nullptr; }
};

ParseResult parse_trace(std::string_view text);

}  // namespace tv
