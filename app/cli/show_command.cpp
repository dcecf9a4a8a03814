// thunder-viz show --model NAME: acquire a built-in model and print its traces.
#include <iostream>

#include "cli/command.h"
#include "cli/model_options.h"
#include "format/printer.h"
#include "jit/acquire.h"

namespace tv::cli {

void add_show_command(CLI::App& app, Runner& run) {
  auto* cmd = app.add_subcommand("show", "Print the prologue, computation and epilogue traces of a built-in model");
  struct Options {
    ModelOptions model;
    std::string trace = "all";
    int depth = PrintOptions::kAllLevels;
  };
  auto o = std::make_shared<Options>();
  o->model.add_to(*cmd);
  cmd->add_option("--trace", o->trace, "which trace to print")
      ->check(CLI::IsMember({"prologue", "computation", "epilogue", "all"}))
      ->capture_default_str();
  cmd->add_option("--depth", o->depth, "subsymbol levels to print (0: top level only, as trace.python())");
  cmd->callback([&run, o] {
    run = [o] {
      auto module = o->model.make();
      auto traces = jit::acquire(module);
      PrintOptions options;
      options.depth = o->depth;
      auto show = [&](const char* kind, const TracePtr& t) {
        if (o->trace != "all" && o->trace != kind) return;
        if (o->trace == "all") std::cout << "=== " << kind << " ===\n";
        std::cout << print_trace(*t, options) << "\n";
        if (o->trace == "all") std::cout << "\n";
      };
      show("prologue", traces.prologue);
      show("computation", traces.computation);
      show("epilogue", traces.epilogue);
      return kOk;
    };
  });
}

}  // namespace tv::cli
