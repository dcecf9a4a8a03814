// thunder-viz import FILE: parse a Thunder printout and print it back.
#include <iostream>
#include <sstream>

#include "capture/capture.h"
#include "cli/command.h"
#include "format/parser.h"
#include "format/printer.h"

namespace tv::cli {

void add_import_command(CLI::App& app, Runner& run) {
  auto* cmd = app.add_subcommand("import", "Parse a Thunder trace printout (str(trace) or trace.python()) and print it back");
  auto file = std::make_shared<std::string>();
  auto depth = std::make_shared<int>(PrintOptions::kAllLevels);
  auto check = std::make_shared<bool>(false);
  cmd->add_option("FILE", *file, "trace text file, or - for standard input")->required();
  cmd->add_option("--depth", *depth, "subsymbol levels to print (0: top level only, as trace.python())")
      ->check(CLI::Range(0, PrintOptions::kAllLevels));
  cmd->add_flag("--check", *check, "verify the round trip: the reprint must equal the file (exit 1 if not)");
  cmd->callback([&run, file, depth, check] {
    run = [file, depth, check]() -> int {
      std::string text;
      if (*file == "-") {
        std::stringstream ss;
        ss << std::cin.rdbuf();
        text = ss.str();
      } else {
        text = read_text_file(*file);
      }
      auto parsed = parse_trace(text);
      if (!parsed) throw BadInput(parsed.error->describe(*file));
      PrintOptions options;
      options.depth = *depth;
      auto printed = print_trace(*parsed.trace, options);
      if (!*check) {
        std::cout << printed << "\n";
        return kOk;
      }
      // A file saved with a final newline still round-trips: the printer writes none.
      std::string expected = text;
      while (!expected.empty() && expected.back() == '\n') expected.pop_back();
      if (printed == expected) {
        std::cout << *file << ": round trip OK (" << parsed.trace->body.size() << " statements)\n";
        return kOk;
      }
      size_t line = 1, i = 0;
      for (; i < printed.size() && i < expected.size() && printed[i] == expected[i]; ++i) line += printed[i] == '\n';
      std::cerr << *file << ":" << line << ": round trip differs from here on (try --depth 0 for a trace.python() printout)\n";
      return kDifference;
    };
  });
}

}  // namespace tv::cli
