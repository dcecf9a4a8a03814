// thunder-viz show FILE.tvz.json | --model NAME: print the traces of a capture (show_capture.h) or of
// a built-in model, or per stage the memory a run of each trace holds (--memory).
#include <fmt/format.h>

#include <iostream>

#include "cli/command.h"
#include "cli/show_capture.h"
#include "common/model_options.h"
#include "format/printer.h"
#include "jit/acquire.h"
#include "passes/memory.h"

namespace tv::cli {

namespace {

struct Options {
  ShowCaptureOptions capture;
  ModelOptions model;
  bool memory = false;  // per stage: peak live bytes and saved-for-backward bytes instead of the traces
};

std::string megabytes(int64_t bytes) { return fmt::format("{:.3f} MB", static_cast<double>(bytes) / 1e6); }

// One line per stage of each kind: what a run of that stage's trace holds at most (passes/memory.h).
void show_memory(const PipelineRecord& p, const std::string& trace) {
  for (auto kind : kTraceKinds) {
    if (!shows_kind(trace, kind)) continue;
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
  const std::string& trace = o.capture.trace;
  if (trace == "backward")
    throw BadInput("show --model prints the acquired prologue, computation and epilogue; for the backward, save a capture "
                   "(run --model NAME --out run.tvz.json) and show it");
  auto module = o.model.make();
  auto traces = jit::acquire(module);
  PrintOptions options;
  options.depth = o.capture.depth;
  auto show = [&](const char* kind, const char* alias, const TracePtr& t) {
    if (trace != "all" && trace != kind && trace != alias) return;
    if (trace == "all") std::cout << "=== " << kind << " ===\n";
    std::cout << print_trace(*t, options) << "\n";
    if (trace == "all") std::cout << "\n";
  };
  show("prologue", "prologue", traces.prologue);
  show("computation", "forward", traces.computation);
  show("epilogue", "epilogue", traces.epilogue);
  return kOk;
}

}  // namespace

void add_show_command(CLI::App& app, Runner& run) {
  auto* cmd = app.add_subcommand("show", "Print the traces of a capture (FILE.tvz.json) or of a built-in model (--model)");
  auto o = std::make_shared<Options>();
  add_show_capture_options(*cmd, o->capture);
  o->model.add_to(*cmd);
  cmd->add_flag("--memory", o->memory,
                "with FILE: per stage, the most tensor bytes a run holds at once (from the trace's del placement) and "
                "what the forward saves for the backward, instead of the traces");
  cmd->callback([&run, o, cmd] {
    bool model = cmd->get_option("--model")->count() > 0;
    run = [o, model] {
      const auto& c = o->capture;
      if (c.file.empty() == !model)
        throw BadInput("show: give exactly one of FILE.tvz.json or --model NAME (e.g. show run.tvz.json, show --model mlp)");
      if (model && (!c.pipeline.empty() || !c.stage.empty() || o->memory || c.check))
        throw BadInput("show --model: --pipeline, --stage, --memory and --check need a capture FILE");
      if (o->memory && !c.stage.empty()) throw BadInput("show --memory lists every stage: drop --stage");
      if (model) return show_model(*o);
      if (o->memory) o->capture.instead_of_stages = [trace = c.trace](const PipelineRecord& p) { show_memory(p, trace); };
      return show_capture(o->capture);
    };
  });
}

}  // namespace tv::cli
