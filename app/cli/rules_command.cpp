// thunder-viz rules: the composition-rules matrix, computed by running the engine.
#include <iostream>

#include "cli/command.h"
#include "transforms/order.h"
#include "common/model_options.h"
#include "cli/progress.h"
#include "capture/gather.h"
#include "dist/launch.h"
#include "jit/zoo.h"
#include "rules/compute.h"

namespace tv::cli {

namespace {

// The model part of a capture that holds only a rules matrix.
ModelRecord model_record(const std::string& name, const std::map<std::string, std::string>& params) {
  ModelRecord r;
  r.name = name;
  r.params = params;
  for (const auto& p : jit::make_model(name, params).parameters) {
    auto meta = p.meta();
    r.parameters.push_back({p.name, meta.shape, meta.dtype});
  }
  return r;
}

}  // namespace

void add_rules_command(CLI::App& app, Runner& run) {
  auto* cmd = app.add_subcommand("rules", "Compute which transform orders compose, and why (runs every ordered pair)");
  struct Options {
    ModelOptions model;
    int world = 2;
    std::string format = "text";
    std::string out;
    LaunchOptions launch;
    std::vector<std::string> semantics;
  };
  auto o = std::make_shared<Options>();
  o->model.add_to(*cmd);
  cmd->add_option("--world", o->world, "ranks (gloo threads)")->check(CLI::Range(1, 16))->capture_default_str();
  cmd->add_option("--format", o->format, "output format")->check(CLI::IsMember({"text", "markdown", "json"}))->capture_default_str();
  cmd->add_option("--semantics", o->semantics, "compute in these semantics modes only (default: every mode, side by side)");
  cmd->add_option("--out", o->out, "also save the matrix in a capture FILE.tvz.json (its /rules member)")
      ->check(file_name_check());
  o->launch.add_to(*cmd);
  auto* world_option = cmd->get_option("--world");
  cmd->callback([&run, o, world_option] {
    run = [o, world_option] {
      auto launch = o->launch.start();
      RulesRequest request;
      request.model = o->model.model;
      request.params = o->model.param_map();
      request.world_size = o->world;
      if (launch) {
        if (world_option->count() && o->world != launch->size())
          throw BadInput("--world " + std::to_string(o->world) + " but the launch has WORLD_SIZE=" +
                         std::to_string(launch->size()) + " (drop --world under --launch env)");
        request.world_size = launch->size();
        request.launch = launch.get();
        request.gather_ranks = [l = launch.get()](Capture& c) { gather_ranks(c, *l); };
      }
      request.semantics = o->semantics;
      if (!o->out.empty() && prints_report(launch.get())) check_output_file(o->out);
      RulesMatrix m;
      {
        ProgressBar bar("rules");
        try {
          m = compute_rules(request, [&](double f, const std::string& what) { bar.update(f, what); });
        } catch (const std::invalid_argument& e) {
          throw BadInput(std::string(o->semantics.empty() ? "" : "--semantics: ") + e.what());
        }
      }
      if (!prints_report(launch.get())) return static_cast<int>(kOk);  // rank 0 prints and writes the matrix
      std::cout << (o->format == "markdown" ? rules_markdown(m) : o->format == "json" ? rules_json(m) + "\n" : rules_text(m));
      int exit_code = kOk;
      for (const auto& c : m.cells)
        // A broken run is a failure of the tool's check; a semantics mode's failure or refusal is the finding.
        if (c.verdict == Verdict::not_comparable && c.outcome == Outcome::failed && c.rule == rule::kRunFailed)
          exit_code = kDifference;
      if (!o->out.empty()) {
        Capture capture;
        capture.tool_version = "0.1.0";
        capture.model = model_record(request.model, request.params);
        capture.rules = m;
        try {
          save_capture_checked(capture, o->out);
        } catch (const BadInput& e) {
          report_error(std::string(e.what()) + " (the matrix above is not saved there)", kBadInput);
          if (exit_code == kOk) exit_code = kBadInput;
        }
      }
      return exit_code;
    };
  });
}

}  // namespace tv::cli
