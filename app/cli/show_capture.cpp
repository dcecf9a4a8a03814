#include "cli/show_capture.h"

#include <fmt/format.h>

#include <iostream>

#include "cli/report_text.h"
#include "common/checked.h"
#include "rules/text.h"
#include "session/assess.h"

namespace tv::cli {

using app::BadInput;
using app::kOk;

namespace {

std::string valid_pipelines(const Capture& c) {
  std::string out;
  for (size_t i = 0; i < c.pipelines.size(); ++i) out += fmt::format("{}{} [{}]", i ? ", " : "", i, c.pipelines[i].spec.label());
  return out.empty() ? "none (the capture holds no pipeline)" : out;
}

std::string valid_stages(const std::vector<Stage>& stages) {
  std::string out;
  for (size_t i = 0; i < stages.size(); ++i) out += fmt::format("{}{} '{}'", i ? ", " : "", i, stages[i].pass);
  return out.empty() ? "none" : out;
}

// The index of --stage in `stages` (a number or a pass name), or -1.
int find_stage(const std::vector<Stage>& stages, const std::string& stage) {
  if (!stage.empty() && stage.find_first_not_of("0123456789") == std::string::npos) {
    // Digits beyond what any list holds (99999999999999999999) are simply no such stage.
    if (stage.size() > 9) return -1;
    auto i = std::stoul(stage);
    return i < stages.size() ? static_cast<int>(i) : -1;
  }
  for (size_t i = 0; i < stages.size(); ++i)
    if (stages[i].pass == stage) return static_cast<int>(i);
  return -1;
}

void print_stage(const Stage& s, TraceKind kind, size_t index, size_t count, const PrintOptions& options) {
  std::cout << fmt::format("=== {} stage {}/{}: {}{} ===\n", trace_kind_name(kind), index, count - 1, s.pass,
                           s.failed() ? " (" + stage_state(s) + ")" : s.changed ? "" : " (unchanged)");
  std::cout << (s.trace ? print_trace(*s.trace, options) : "(no trace)") << "\n\n";
}

void show_pipeline(const Capture& c, int index, const ShowCaptureOptions& o) {
  const auto& p = c.pipelines[index];
  std::cout << fmt::format("##### pipeline {} [{}] world {} {}: {}\n", index, p.spec.label(), p.spec.world_size,
                           p.spec.device, pipeline_line(c, index));
  for (const auto& reason : p.outcome.reasons) std::cout << "  " << reason << "\n";
  if (o.instead_of_stages) {
    o.instead_of_stages(p);
    return;
  }
  PrintOptions options;
  options.depth = o.depth;
  bool shown = false;
  for (auto kind : kTraceKinds) {
    if (!shows_kind(o.trace, kind)) continue;
    const auto& stages = p.stages.of(kind);
    if (!o.stage.empty()) {
      int i = find_stage(stages, o.stage);
      if (i < 0) {
        if (o.trace == "all") continue;
        throw BadInput(fmt::format("--stage {}: pipeline {} has no such {} stage; valid stages: {}", o.stage, index,
                                   trace_kind_name(kind), valid_stages(stages)));
      }
      print_stage(stages[i], kind, i, stages.size(), options);
      shown = true;
      continue;
    }
    for (size_t i = 0; i < stages.size(); ++i)
      std::cout << fmt::format("  {} {:>2} {:<40} {}\n", trace_kind_name(kind), i, stages[i].pass, stage_state(stages[i]));
    if (!stages.empty()) print_stage(stages.back(), kind, stages.size() - 1, stages.size(), options);
  }
  if (!o.stage.empty() && !shown) {
    std::string valid;
    for (auto kind : kTraceKinds) valid += fmt::format("\n  {}: {}", trace_kind_name(kind), valid_stages(p.stages.of(kind)));
    throw BadInput(fmt::format("--stage {}: no stage of pipeline {} has that index or pass name; valid stages:{}", o.stage,
                               index, valid));
  }
}

}  // namespace

bool shows_kind(const std::string& trace, TraceKind kind) {
  return trace == "all" || trace == trace_kind_name(kind) || (trace == "computation" && kind == TraceKind::forward);
}

int show_capture(const ShowCaptureOptions& o) {
  Capture c = app::load_capture_checked(o.file);
  if (o.check) parse_stored_traces(c);
  int only = -1;
  if (!o.pipeline.empty()) {
    bool number = o.pipeline.find_first_not_of("0123456789") == std::string::npos;
    only = number && o.pipeline.size() < 6 ? std::stoi(o.pipeline) : -1;
    if (only < 0 || only >= static_cast<int>(c.pipelines.size()))
      throw BadInput(fmt::format("--pipeline {}: not a pipeline of {}; valid values: {}", o.pipeline, o.file, valid_pipelines(c)));
  }
  std::cout << fmt::format("capture {}: model {}, {} pipeline(s), {} comparison(s){}\n", o.file, c.model.name,
                           c.pipelines.size(), c.comparisons.size(), c.rules ? ", rules matrix" : "");
  for (int i = 0; i < static_cast<int>(c.pipelines.size()); ++i)
    if (only < 0 || only == i) show_pipeline(c, i, o);
  for (const auto& cmp : c.comparisons)
    if (only < 0 || only == cmp.left || only == cmp.right) std::cout << comparison_line(c, cmp) << "\n";
  if (c.rules && only < 0) std::cout << rules_text(*c.rules);
  return kOk;
}

void add_show_capture_options(CLI::App& cmd, ShowCaptureOptions& o) {
  cmd.add_option("file", o.file, "a capture written by run/compare/rules/batch --out");
  cmd.add_option("--trace", o.trace, "which trace to print")
      ->check(CLI::IsMember({"prologue", "forward", "computation", "backward", "epilogue", "all"}))
      ->capture_default_str();
  cmd.add_option("--pipeline", o.pipeline, "with FILE: only this pipeline (index)");
  cmd.add_option("--stage", o.stage, "with FILE: print this stage (index or pass name) instead of the final trace");
  cmd.add_option("--depth", o.depth, "subsymbol levels to print (0: top level only, as trace.python())")
      ->check(CLI::Range(0, PrintOptions::kAllLevels));
  cmd.add_flag("--check", o.check,
               "with FILE: parse every stored trace before printing (a load parses a trace when it is first shown), so "
               "a damaged one is reported, with its JSON path, line and column, before any output");
}

}  // namespace tv::cli
