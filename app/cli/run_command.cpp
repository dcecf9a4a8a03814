// thunder-viz run --model NAME: one forward and backward through the whole pipeline, checked
// against LibTorch eager autograd. --cuda-graph (with --device cuda) then replays the step as one
// CUDA graph and prints both times per step and how far the graph's numbers are from the step's.
#include <iostream>

#include "cli/command.h"
#include "common/model_options.h"
#include "common/semantics_options.h"
#include "cli/report_text.h"
#include "dist/launch.h"
#include "session/run.h"

namespace tv::cli {

void add_run_command(CLI::App& app, Runner& run) {
  auto* cmd = app.add_subcommand("run", "Run a built-in model's forward and backward once and check the numbers against LibTorch eager");
  struct Options {
    ModelOptions model;
    std::string order = "jit";
    int world = 1;
    std::string device = "cpu";
    bool stages = false;
    int depth = 0;
    bool cuda_graph = false;
    int graph_steps = 20;
    bool no_generated_kernels = false;
    SemanticsOptions semantics;
    CaptureOutputs outputs;
    LaunchOptions launch;
  };
  auto o = std::make_shared<Options>();
  o->model.add_to(*cmd);
  cmd->add_option("--order", o->order, "transforms in the order they are applied, e.g. jit,remat")->capture_default_str();
  cmd->add_option("--world", o->world, "ranks (threads; gloo on cpu, NCCL on cuda)")->check(CLI::Range(1, 64))->capture_default_str();
  cmd->add_option("--device", o->device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  cmd->add_flag("--stages", o->stages, "print every stage of every trace, not only the final ones");
  cmd->add_option("--depth", o->depth, "subsymbol levels to print")->check(CLI::Range(0, PrintOptions::kAllLevels))->capture_default_str();
  cmd->add_flag("--cuda-graph", o->cuda_graph,
                "then capture the whole step as one CUDA graph, replay it and time it against the step (needs --device cuda)");
  cmd->add_option("--graph-steps", o->graph_steps, "with --cuda-graph: calls each time is the mean of")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  add_no_generated_kernels_flag(*cmd, o->no_generated_kernels);
  o->semantics.add_to(*cmd);
  o->outputs.add_to(*cmd);
  o->launch.add_to(*cmd);
  auto* world_option = cmd->get_option("--world");
  cmd->callback([&run, o, world_option] {
    run = [o, world_option] {
      o->semantics.check();
      if (o->cuda_graph && o->device != "cuda")
        throw BadInput("--cuda-graph replays the step as a CUDA graph: add --device cuda");
      auto launch = o->launch.start();
      RunRequest request;
      const std::string note = o->model.apply(request);
      if (!note.empty() && prints_report(launch.get())) std::cout << note << "\n";
      PipelineSpec spec;
      spec.order = parse_order(o->order);
      spec.device = o->device == "cuda" ? "cuda:0" : "cpu";
      spec.world_size = o->world;
      if (launch) {
        if (world_option->count() && o->world != launch->size())
          throw BadInput("--world " + std::to_string(o->world) + " but the launch has WORLD_SIZE=" +
                         std::to_string(launch->size()) + " (drop --world under --launch env)");
        spec.world_size = launch->size();
        LaunchOptions::attach(request, *launch);
      }
      o->semantics.apply(spec);
      request.pipelines = {spec};
      if (o->cuda_graph) request.cuda_graph_steps = o->graph_steps;
      request.generated_kernels = !o->no_generated_kernels;
      o->outputs.check(launch.get());
      auto capture = run_pipelines_checked(request);
      const auto& p = capture.pipelines.front();
      // A pipeline that stopped before building anything is bad input; one that failed while
      // building (the semantics mode's failure) shows its stages, the failed one last.
      if (!p.error.empty() && (p.outcome.kind == Outcome::refused || p.stages.forward.empty())) {
        o->outputs.write(capture, launch.get(), kBadInput);
        throw BadInput(p.error);
      }
      if (!prints_report(launch.get())) return o->outputs.write(capture, launch.get(), p.outcome.ok() ? kOk : kDifference);
      PrintOptions options;
      options.depth = o->depth;
      print_stages(std::cout, p, o->stages, options);
      print_verdicts(std::cout, p);
      bool pass = p.outcome.ok();
      if (o->cuda_graph && p.replay)
        for (const auto& r : p.replay->ranks)
          if (!r.cuda_graph || !r.cuda_graph->matches()) {
            std::cout << "rank " << r.rank << ": the CUDA graph's numbers are not the step's\n";
            pass = false;
          }
      if (!p.error.empty()) std::cout << p.error << "\n";
      std::cout << p.outcome.line() << ": " << request.model << " [" << spec.label() << "] " << reference_words(request)
                << "\n";
      return o->outputs.write(capture, launch.get(), pass ? kOk : kDifference);
    };
  });
}

}  // namespace tv::cli
