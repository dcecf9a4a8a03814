// libFuzzer harness: the trace parser, strictly. Any input may be refused with a ParseError; the
// parser must not crash, leak, hang or throw. Whatever parses must print to text that parses, and
// that text must reprint identically (parse -> print -> parse -> print is a fixed point).
#include <cstddef>
#include <cstdint>
#include <string>

#include "format/parser.h"
#include "format/printer.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto first = tv::parse_trace(input);
  if (!first) return 0;
  const std::string printed = tv::print_trace(*first.trace);
  auto second = tv::parse_trace(printed);
  if (!second)
    tv::fuzz::violation("what parses prints to text that parses", input, printed,
                        second.error ? second.error->describe("printed") : "no error given");
  const std::string reprinted = tv::print_trace(*second.trace);
  if (reprinted != printed)
    tv::fuzz::violation("the printed text reprints identically", printed, reprinted, "the second print differs");
  return 0;
}
