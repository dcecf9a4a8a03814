// thunder-viz batch CONFIG.json: runs a matrix of models x transform orders x world sizes x devices.
// One case is (model, world size, device); it runs every order as a pipeline on the same weights and
// inputs. Orders made of the same transforms (jit,ddp and ddp,jit) form a group: the group's first
// order is checked against LibTorch eager, each other order is compared with it (traces and
// numbers), which is the question the tool exists to answer. Each case is saved as
// DIR/<model>_w<world>_<device>.tvz.json; DIR/summary.txt and the JUnit file report the verdicts.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <set>

#include "cli/batch_config.h"
#include "cli/batch_results.h"
#include "cli/command.h"
#include "cli/progress.h"
#include "exec/device_check.h"
#include "transforms/semantics.h"

namespace tv::cli {

namespace {

std::string case_id(const BatchModel& m, int world, const std::string& device, const std::string& semantics) {
  std::string dev;
  for (char ch : device)
    if (ch != ':') dev += ch;  // cuda:0 -> cuda0
  // The default mode keeps the plain name; another mode is a suffix: linear_w2_cpu_thunder-2024-03.
  return fmt::format("{}_w{}_{}{}", m.id, world, dev, semantics == kLazy ? std::string() : "_" + semantics);
}

// Indices of the orders, grouped by their set of transforms, each group in config order.
std::vector<std::vector<int>> groups_of(const std::vector<std::vector<std::string>>& orders) {
  std::vector<std::multiset<std::string>> keys;
  std::vector<std::vector<int>> groups;
  for (int i = 0; i < static_cast<int>(orders.size()); ++i) {
    std::multiset<std::string> key(orders[i].begin(), orders[i].end());
    size_t g = 0;
    while (g < keys.size() && keys[g] != key) ++g;
    if (g == keys.size()) {
      keys.push_back(key);
      groups.emplace_back();
    }
    groups[g].push_back(i);
  }
  return groups;
}

struct Progress {
  ProgressBar bar{"batch"};
  size_t done = 0, total = 1;
};

// Runs one case: one run_pipelines call per group, merged into one capture (config order).
Capture run_case(const BatchConfig& config, const BatchModel& m, int world, const std::string& device,
                 const std::string& semantics, const std::string& id, Progress& progress) {
  Capture merged;
  merged.pipelines.resize(config.orders.size());
  for (const auto& group : groups_of(config.orders)) {
    RunRequest request;
    request.model = m.name;
    request.params = m.params;
    for (int i : group) request.pipelines.push_back(PipelineSpec{config.orders[i], semantics, "", world, device});
    auto part = run_pipelines_checked(request, [&](double f, const std::string& what) {
      progress.bar.update((progress.done + f * group.size()) / progress.total, id + ": " + what);
    });
    merged.tool_version = part.tool_version;
    merged.model = part.model;
    for (size_t k = 0; k < group.size(); ++k) merged.pipelines[group[k]] = std::move(part.pipelines[k]);
    for (auto cmp : part.comparisons) {
      cmp.left = group[cmp.left];
      cmp.right = group[cmp.right];
      merged.comparisons.push_back(std::move(cmp));
    }
    progress.done += group.size();
  }
  std::sort(merged.comparisons.begin(), merged.comparisons.end(),
            [](const Comparison& a, const Comparison& b) { return a.right < b.right; });
  return merged;
}

// Every device of the config, at every world size, must be there: a missing GPU is a config error
// (exit 2) before anything runs, as `compare --device cuda` is, not a failure of every case.
void check_devices(const BatchConfig& config, const std::string& file) {
  for (size_t i = 0; i < config.devices.size(); ++i)
    for (int world : config.world_sizes)
      if (auto why = exec::device_unavailable(config.devices[i], world); !why.empty())
        throw BadInput(fmt::format("{}: /devices/{}: {}; or take \"{}\" out of \"devices\"", file, i, why,
                                   config.devices[i]));
}

std::string capture_path(const std::string& out_dir, const std::string& id) {
  return (std::filesystem::path(out_dir) / (id + ".tvz.json")).string();
}

std::string summary_path(const std::string& out_dir) { return (std::filesystem::path(out_dir) / "summary.txt").string(); }

// The files a batch writes into its folder, so that each is checked before the first case runs.
std::vector<std::string> output_paths(const BatchConfig& config, const std::string& out_dir) {
  std::vector<std::string> paths{summary_path(out_dir)};
  for (const auto& m : config.models)
    for (int world : config.world_sizes)
      for (const auto& device : config.devices)
        for (const auto& semantics : config.semantics) paths.push_back(capture_path(out_dir, case_id(m, world, device, semantics)));
  return paths;
}

}  // namespace

void add_batch_command(CLI::App& app, Runner& run) {
  auto* cmd = app.add_subcommand("batch", "Run a matrix of models x orders x world sizes x devices from a JSON config");
  struct Options {
    std::string config;
    std::string out_dir = "batch-out";
    std::string junit;
  };
  auto o = std::make_shared<Options>();
  cmd->add_option("config", o->config, "CONFIG.json: models, orders, world_sizes, devices (see samples/batch)")->required();
  cmd->add_option("--out-dir", o->out_dir, "where the captures and summary.txt go")
      ->check(file_name_check())
      ->capture_default_str();
  cmd->add_option("--junit", o->junit, "also write a JUnit XML report (one testcase per case and pipeline)")
      ->check(file_name_check());
  cmd->callback([&run, o] {
    run = [o] {
      auto config = load_batch_config(o->config);  // every config error before anything runs
      check_devices(config, o->config);
      std::error_code ec;
      std::filesystem::create_directories(o->out_dir, ec);
      if (ec) throw BadInput(fmt::format("--out-dir {}: cannot create the folder: {}", o->out_dir, ec.message()));
      for (const auto& path : output_paths(config, o->out_dir)) check_output_file(path);
      if (!o->junit.empty()) check_output_file(o->junit);
      Progress progress;
      progress.total = config.models.size() * config.world_sizes.size() * config.devices.size() *
                       config.semantics.size() * config.orders.size();
      std::vector<BatchCase> cases;
      for (const auto& m : config.models)
        for (int world : config.world_sizes)
          for (const auto& device : config.devices)
            for (const auto& semantics : config.semantics) {
              BatchCase c;
              c.id = case_id(m, world, device, semantics);
              auto start = std::chrono::steady_clock::now();
              auto capture = run_case(config, m, world, device, semantics, c.id, progress);
              c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
              save_capture_checked(capture, capture_path(o->out_dir, c.id));
              for (int i = 0; i < static_cast<int>(capture.pipelines.size()); ++i) {
                c.orders.push_back(capture.pipelines[i].spec.label());
                c.verdicts.push_back(pipeline_verdict(capture, i));
              }
              cases.push_back(std::move(c));
            }
      auto summary = summary_text(cases);
      write_output_file(summary_path(o->out_dir), summary);
      if (!o->junit.empty()) write_output_file(o->junit, junit_xml(cases, "thunder-viz batch " + o->config));
      std::cout << summary;
      for (const auto& c : cases)
        if (!c.ok()) return static_cast<int>(kDifference);
      return static_cast<int>(kOk);
    };
  });
}

}  // namespace tv::cli
