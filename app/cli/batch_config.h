// The configuration of `thunder-viz batch`: which models, transform orders, world sizes and devices
// to run, as a JSON file:
//   {"models": ["linear", {"name": "gpt", "params": {"layers": 1}}],
//    "orders": ["jit", "jit,ddp", "ddp,jit"], "world_sizes": [1, 2], "devices": ["cpu"],
//    "semantics": ["lazy", "thunder-2024-03"]}
// (semantics: the modes of transforms/semantics.h each case runs in; lazy by default).
// Contract: load_batch_config checks everything before anything runs (JSON syntax, unknown keys,
// models and their parameters, transform names, world sizes, devices, semantics modes) and throws BadInput
// "<config>: <JSON path>: <what is wrong>; valid ...: ...". Illegal orders are not config errors:
// they run and are reported as refused.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace tv::cli {

struct BatchModel {
  std::string name;
  std::map<std::string, std::string> params;
  std::string id;  // the name in file names: the model name, "_m<index>" added when a name repeats
};

struct BatchConfig {
  std::vector<BatchModel> models;
  std::vector<std::vector<std::string>> orders = {{"jit"}};
  std::vector<int> world_sizes = {1};
  std::vector<std::string> devices = {"cpu"};
  std::vector<std::string> semantics = {"lazy"};
};

BatchConfig load_batch_config(const std::string& path);

}  // namespace tv::cli
