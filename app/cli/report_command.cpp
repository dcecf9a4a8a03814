// thunder-viz report FILE.tvz.json --html OUT.html --text OUT.txt: reports of a capture.
#include <filesystem>
#include <iostream>

#include "cli/command.h"
#include "cli/report.h"

namespace tv::cli {

void add_report_command(CLI::App& app, Runner& run) {
  auto* cmd = app.add_subcommand("report", "Write a self-contained HTML report and/or a plain-text report of a capture");
  struct Options {
    std::string file, html, text;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("file", o->file, "a capture FILE.tvz.json")->required();
  cmd->add_option("--html", o->html, "write one self-contained HTML page (no network access)")->check(file_name_check());
  cmd->add_option("--text", o->text, "write a plain-text report (no timings or paths: two runs diff cleanly)")
      ->check(file_name_check());
  cmd->callback([&run, o] {
    run = [o] {
      if (o->html.empty() && o->text.empty()) throw BadInput("report: give --html OUT.html and/or --text OUT.txt");
      for (const auto* out : {&o->html, &o->text})
        if (!out->empty()) check_output_file(*out);
      auto capture = load_capture_checked(o->file);
      // A report covers the whole capture: every stored trace is read before any file is written, so
      // a damaged one refuses both reports alike (--html diffs every stage, --text lists them).
      parse_stored_traces(capture);
      auto name = std::filesystem::path(o->file).filename().string();
      if (!o->html.empty()) {
        write_output_file(o->html, html_report(capture, name));
        std::cout << "wrote " << o->html << "\n";
      }
      if (!o->text.empty()) {
        write_output_file(o->text, text_report(capture, name));
        std::cout << "wrote " << o->text << "\n";
      }
      return static_cast<int>(kOk);
    };
  });
}

}  // namespace tv::cli
