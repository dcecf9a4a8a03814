// thunder-viz show FILE.tvz.json | --model NAME: print the traces of a capture or of a built-in model.
#include <fmt/format.h>

#include <iostream>

#include "cli/command.h"
#include "cli/report_text.h"
#include "common/model_options.h"
#include "session/assess.h"
#include "format/printer.h"
#include "jit/acquire.h"
#include "passes/memory.h"
#include "rules/compute.h"

namespace tv::cli {

namespace {

struct Options {
  std::string file;
  ModelOptions model;
  std::string trace = "all";
  std::string pipeline;  // empty: every pipeline
  std::string stage;     // index or pass name; empty: the list of stages and the final trace
  int depth = PrintOptions::kAllLevels;
  bool memory = false;   // per stage: peak live bytes and saved-for-backward bytes instead of the traces
};

std::string megabytes(int64_t bytes) { return fmt::format("{:.3f} MB", static_cast<double>(bytes) / 1e6); }

// One line per stage of each kind: what a run of that stage's trace holds at most (passes/memory.h).
void show_memory(const PipelineRecord& p, const Options& o) {
  for (auto kind : kTraceKinds) {
    if (o.trace != "all" && o.trace != trace_kind_name(kind) && !(o.trace == "computation" && kind == TraceKind::forward))
      continue;
    const auto& stages = p.stages.of(kind);
    for (size_t i = 0; i < stages.size(); ++i) {
      if (!stages[i].trace) continue;
      auto m = passes::trace_memory(*stages[i].trace);
      std::string at = m.peak_at < 0 ? "the inputs" : fmt::format("statement {}", m.peak_at);
      std::cout << fmt::format("  {:<8} {:>2} {:<40} peak live {:>12} (after {}){}\n", trace_kind_name(kind), i,
                               stages[i].pass, megabytes(m.peak_live), at,
                               m.saved_for_backward ? "  saved for backward " + megabytes(m.saved_for_backward) : "");
    }
  }
}

int show_model(const Options& o) {
  if (o.trace == "backward")
    throw BadInput("show --model prints the acquired prologue, computation and epilogue; for the backward, save a capture "
                   "(run --model NAME --out run.tvz.json) and show it");
  auto module = o.model.make();
  auto traces = jit::acquire(module);
  PrintOptions options;
  options.depth = o.depth;
  auto show = [&](const char* kind, const char* alias, const TracePtr& t) {
    if (o.trace != "all" && o.trace != kind && o.trace != alias) return;
    if (o.trace == "all") std::cout << "=== " << kind << " ===\n";
    std::cout << print_trace(*t, options) << "\n";
    if (o.trace == "all") std::cout << "\n";
  };
  show("prologue", "prologue", traces.prologue);
  show("computation", "forward", traces.computation);
  show("epilogue", "epilogue", traces.epilogue);
  return kOk;
}

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

void show_pipeline(const Capture& c, int index, const Options& o) {
  const auto& p = c.pipelines[index];
  std::cout << fmt::format("##### pipeline {} [{}] world {} {}: {}\n", index, p.spec.label(), p.spec.world_size,
                           p.spec.device, pipeline_line(c, index));
  for (const auto& reason : p.outcome.reasons) std::cout << "  " << reason << "\n";
  if (o.memory) {
    show_memory(p, o);
    return;
  }
  PrintOptions options;
  options.depth = o.depth;
  bool shown = false;
  for (auto kind : kTraceKinds) {
    if (o.trace != "all" && o.trace != trace_kind_name(kind) && !(o.trace == "computation" && kind == TraceKind::forward))
      continue;
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

int show_capture(const Options& o) {
  auto c = load_capture_checked(o.file);
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

}  // namespace

void add_show_command(CLI::App& app, Runner& run) {
  auto* cmd = app.add_subcommand("show", "Print the traces of a capture (FILE.tvz.json) or of a built-in model (--model)");
  auto o = std::make_shared<Options>();
  cmd->add_option("file", o->file, "a capture written by run/compare/rules/batch --out");
  o->model.add_to(*cmd);
  cmd->add_option("--trace", o->trace, "which trace to print")
      ->check(CLI::IsMember({"prologue", "forward", "computation", "backward", "epilogue", "all"}))
      ->capture_default_str();
  cmd->add_option("--pipeline", o->pipeline, "with FILE: only this pipeline (index)");
  cmd->add_option("--stage", o->stage, "with FILE: print this stage (index or pass name) instead of the final trace");
  cmd->add_option("--depth", o->depth, "subsymbol levels to print (0: top level only, as trace.python())");
  cmd->add_flag("--memory", o->memory,
                "with FILE: per stage, the most tensor bytes a run holds at once (from the trace's del placement) and "
                "what the forward saves for the backward, instead of the traces");
  cmd->callback([&run, o, cmd] {
    bool model = cmd->get_option("--model")->count() > 0;
    run = [o, model] {
      if (o->file.empty() == !model)
        throw BadInput("show: give exactly one of FILE.tvz.json or --model NAME (e.g. show run.tvz.json, show --model mlp)");
      if (model && (!o->pipeline.empty() || !o->stage.empty() || o->memory))
        throw BadInput("show --model: --pipeline, --stage and --memory need a capture FILE");
      if (o->memory && !o->stage.empty()) throw BadInput("show --memory lists every stage: drop --stage");
      return model ? show_model(*o) : show_capture(*o);
    };
  });
}

}  // namespace tv::cli
