// thunder-viz compare --order A --order B: two transform orders on the same model, weights and
// inputs, stage by stage and number by number.
#include <fmt/format.h>

#include <iostream>

#include "cli/command.h"
#include "common/model_options.h"
#include "common/semantics_options.h"
#include "cli/report_text.h"
#include "diff/diff.h"
#include "dist/launch.h"
#include "exec/device_check.h"
#include "session/assess.h"

namespace tv::cli {

namespace {

// Prints the stage-by-stage verdict and, for the final trace of each kind that differs, the diff.
void print_comparison(std::ostream& out, const Capture& c, const Comparison& cmp, const std::string& reference) {
  const auto& a = c.pipelines[cmp.left];
  const auto& b = c.pipelines[cmp.right];
  out << fmt::format("--- traces: [{}] vs [{}]\n", a.spec.label(), b.spec.label());
  for (const auto& s : cmp.stages)
    out << fmt::format("{:<9} stage {:>2}  {:<36} {:<36} {}\n", s.kind, s.stage, s.left_pass.empty() ? "-" : s.left_pass,
                       s.right_pass.empty() ? "-" : s.right_pass, s.equal ? "same program" : "DIFFERENT");
  for (auto kind : kTraceKinds) {
    auto fa = a.stages.last(kind), fb = b.stages.last(kind);
    if (!fa || !fb) continue;
    auto d = diff_traces(*fa, *fb, PrintOptions{0});
    if (d.same_program) continue;
    out << fmt::format("--- final {} differs ({} changed, {} added, {} removed):\n", trace_kind_name(kind),
                       d.count(DiffKind::changed), d.count(DiffKind::added), d.count(DiffKind::removed));
    out << unified_text(d);
  }
  out << "--- numbers (each " << reference << "):\n";
  for (const auto* p : {&a, &b}) {
    out << "[" << p->spec.label() << "]\n";
    print_verdicts(out, *p);
  }
}

}  // namespace

void add_compare_command(CLI::App& app, Runner& run) {
  auto* cmd = app.add_subcommand("compare", "Compare two transform orders on the same model, weights and inputs");
  struct Options {
    ModelOptions model;
    std::vector<std::string> orders;
    int world = 1;
    std::string device = "cpu";
    SemanticsOptions semantics;
    bool no_generated_kernels = false;
    CaptureOutputs outputs;
    LaunchOptions launch;
  };
  auto o = std::make_shared<Options>();
  o->model.add_to(*cmd);
  cmd->add_option("--order", o->orders, "an order of transforms, e.g. jit,ddp (give two)")->required()->expected(2);
  cmd->add_option("--world", o->world, "ranks (threads; gloo on cpu, NCCL on cuda)")->check(CLI::Range(1, 64))->capture_default_str();
  cmd->add_option("--device", o->device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  o->semantics.add_to(*cmd);
  add_no_generated_kernels_flag(*cmd, o->no_generated_kernels);
  o->outputs.add_to(*cmd);
  o->launch.add_to(*cmd);
  auto* world_option = cmd->get_option("--world");
  cmd->callback([&run, o, world_option] {
    run = [o, world_option] {
      o->semantics.check();
      auto launch = o->launch.start();
      int world = o->world;
      if (launch) {
        if (world_option->count() && o->world != launch->size())
          throw BadInput("--world " + std::to_string(o->world) + " but the launch has WORLD_SIZE=" +
                         std::to_string(launch->size()) + " (drop --world under --launch env)");
        world = launch->size();
      }
      RunRequest request;
      if (launch) LaunchOptions::attach(request, *launch);
      const std::string note = o->model.apply(request);
      if (!note.empty() && prints_report(launch.get())) std::cout << note << "\n";
      request.generated_kernels = !o->no_generated_kernels;
      for (const auto& order : o->orders) {
        PipelineSpec spec;
        spec.order = parse_order(order);
        spec.world_size = world;
        spec.device = o->device == "cuda" ? "cuda:0" : "cpu";
        o->semantics.apply(spec);
        request.pipelines.push_back(spec);
      }
      o->outputs.check(launch.get());
      auto capture = run_pipelines_checked(request);
      if (!prints_report(launch.get())) {
        const auto& cmp = capture.comparisons.front();
        return o->outputs.write(capture, launch.get(), cmp.verdict == Verdict::different ? kDifference : kOk);
      }
      // Orders were validated by parse_order: a refused order never gets here (exit 2 there), and
      // a failure or refusal of the semantics mode is a failed run (exit 1).
      for (int i = 0; i < static_cast<int>(capture.pipelines.size()); ++i) {
        const auto& outcome = capture.pipelines[i].outcome;
        std::cout << pipeline_name(capture, i) << ": " << outcome.line() << "\n";
        // The rest of a failure's text: what was read when, by whom, the rule, the fix.
        for (const auto& reason : outcome.reasons)
          if (auto more = reason.find('\n'); more != std::string::npos) std::cout << reason.substr(more + 1) << "\n";
      }
      const auto& cmp = capture.comparisons.front();
      if (cmp.verdict != Verdict::not_comparable) print_comparison(std::cout, capture, cmp, reference_words(request));
      std::cout << comparison_line(capture, cmp) << "\n";
      std::cout << "verdict: " << verdict_name(cmp.verdict) << " (" << capture.model.name << ", world " << world
                << (launch ? " processes" : "") << ", " << o->device << ", " << capture.pipelines.front().spec.semantics
                << (o->semantics.workaround.empty() ? "" : ", workaround " + o->semantics.workaround) << ")\n";
      int exit_code = cmp.verdict == Verdict::equivalent ? kOk : kDifference;
      if (!exec::device_unavailable(capture.pipelines.front().spec.device, launch ? 1 : world).empty()) exit_code = kBadInput;
      return o->outputs.write(capture, launch.get(), exit_code);
    };
  });
}

}  // namespace tv::cli
