// thunder-viz: the command line (batch mode) and the GUI of Thunder Viz.
#include <iostream>

#include "cli/command.h"
#include "ir/builder.h"
#ifdef TV_HAVE_GUI
#include "gui/gui_commands.h"
#endif

int main(int argc, char** argv) {
  CLI::App app{"Thunder Viz: inspect, compare and replay the traces of a Thunder-style JIT"};
  app.require_subcommand(0, 1);
  tv::cli::Runner run;
  tv::cli::add_models_command(app, run);
  tv::cli::add_show_command(app, run);
  tv::cli::add_run_command(app, run);
  tv::cli::add_compare_command(app, run);
  tv::cli::add_rules_command(app, run);
  tv::cli::add_import_command(app, run);
  tv::cli::add_batch_command(app, run);
  tv::cli::add_report_command(app, run);
#ifdef TV_HAVE_GUI
  tv::gui::add_gui_commands(app, run);  // gui, screenshot
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return tv::cli::kBadInput;
  }
  if (!run) {
    std::cout << app.help();
    return tv::cli::kOk;
  }
  try {
    return run();
  } catch (const tv::cli::BadInput& e) {
    std::cerr << "error: " << e.what() << "\n";
    return tv::cli::kBadInput;
  } catch (const tv::OpError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return tv::cli::kBadInput;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return tv::cli::kDifference;
  }
}
