// tv_gui_app: the `gui` and `screenshot` commands alone, for the GUI tests while app/main.cpp does
// not register them yet (the tests prefer `thunder-viz gui` when it exists).
#include <iostream>

#include "common/errors.h"
#include "gui/gui_commands.h"

int main(int argc, char** argv) {
  CLI::App app{"Thunder Viz GUI (test driver)"};
  app.require_subcommand(1, 1);
  tv::app::Runner run;
  tv::gui::add_gui_commands(app, run);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return tv::app::kBadInput;
  }
  try {
    return run ? run() : tv::app::kOk;
  } catch (const tv::app::BadInput& e) {
    std::cerr << "error: " << e.what() << "\n";
    return tv::app::kBadInput;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return tv::app::kDifference;
  }
}
