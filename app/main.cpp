// thunder-viz-engine: the command line (batch mode) and the GUI of Thunder Viz, every command. Users
// run `thunder-viz` (reader/main.cpp), which answers what only reads a capture itself and becomes
// this program for the rest.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <new>
#include <string>
#include <system_error>

#include "capture/capture.h"
#include "cli/command.h"
#include "exec/device_check.h"
#include "ir/builder.h"
#ifdef TV_HAVE_GUI
#include "gui/gui_commands.h"
#endif

namespace {

// LibTorch's out-of-memory report ("[enforce fail at alloc_cpu.cpp:75] ... you tried to allocate N
// bytes ...") as what ran out, how much was asked for, and what to do.
std::string out_of_memory(const std::string& what) {
  std::string asked;
  auto at = what.find("tried to allocate ");
  if (at == std::string::npos) at = what.find("Tried to allocate ");
  if (at != std::string::npos) {
    auto end = std::min({what.find(". ", at), what.find('\n', at), what.find(" (", at), what.size()});
    asked = " (" + what.substr(at, end - at) + ")";
  }
  return "out of memory" + asked + "; try a smaller model (--param), fewer ranks (--world) or more memory";
}

}  // namespace

using tv::app::report_error;

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
  if (!run) {  // no subcommand: a usage mistake, answered with the help
    std::cerr << app.help();
    return tv::cli::kBadInput;
  }
  try {
    return run();
  } catch (const tv::cli::BadInput& e) {
    return report_error(e.what(), tv::cli::kBadInput);
  } catch (const tv::OpError& e) {
    return report_error(e.what(), tv::cli::kBadInput);
  } catch (const tv::CaptureError& e) {  // a stored trace read after the load (they are parsed when first read)
    return report_error(e.what(), tv::cli::kBadInput);
  } catch (const std::bad_alloc&) {
    return report_error("out of memory; try a smaller model (--param) or fewer ranks (--world)", tv::cli::kDifference);
  } catch (const std::system_error& e) {
    if (e.code() == std::errc::resource_unavailable_try_again)
      return report_error(std::string("could not start a thread (") + e.what() +
                        "): the process reached its limit of threads (ulimit -u) or of memory; use fewer ranks (--world)",
                    tv::cli::kDifference);
    return report_error(e.what(), tv::cli::kDifference);
  } catch (const std::exception& e) {
    if (tv::exec::is_out_of_memory(e.what())) return report_error(out_of_memory(e.what()), tv::cli::kDifference);
    return report_error(e.what(), tv::cli::kDifference);
  }
}
