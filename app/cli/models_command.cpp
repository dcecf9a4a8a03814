// thunder-viz models: the built-in model zoo and its parameters.
#include <iomanip>
#include <iostream>

#include "cli/command.h"
#include "jit/zoo.h"

namespace tv::cli {

void add_models_command(CLI::App& app, Runner& run) {
  auto* cmd = app.add_subcommand("models", "List the built-in models and their parameters");
  cmd->callback([&run] {
    run = [] {
      for (const auto& m : jit::list_models()) {
        std::cout << m.name << "  " << m.description << "\n";
        for (const auto& p : m.params)
          std::cout << "    " << std::left << std::setw(14) << p.name << std::setw(10) << ("=" + p.default_value)
                    << p.description << "\n";
      }
      return kOk;
    };
  });
}

}  // namespace tv::cli
