// Computing the composition-rules matrix by running the engine.
// Contract: for every ordered pair (a, b) of the transforms (jit added last when neither is jit,
// so the pair is jit(b(a(m)))), the order a,b is run against b,a on the model over the world
// size, traces and numbers compared; each cell is classified from what happened, never from a
// table. Then the chosen longer orders. All of it once per semantics mode asked for
// (transforms/semantics.h; every mode by default), so the renderings show the modes side by side.
// A run that fails on a rank (not on a rule) is made once more before its cell records it (threads
// only). Every
// rule name that appears gets its explanation from rule_explanation(). Under a one-rank-per-process
// launch every process computes the same cells in the same order, and rank 0's cells are classified
// from every rank's results.
#pragma once
#include <string>
#include <vector>

#include "session/run.h"
#include "record/rules_matrix.h"
#include "rules/text.h"
#include "transforms/transform.h"

namespace tv {

struct RulesRequest {
  std::string model = "linear";
  std::map<std::string, std::string> params;
  int world_size = 2;
  std::vector<std::string> transforms = transform_names();  // every transform the engine has, jit first
  // Longer orders, each compared with its reverse.
  std::vector<std::vector<std::string>> longer_orders = {{"jit", "ddp", "remat"}, {"jit", "fsdp", "autocast"}};
  // One rank per process: every cell runs with these (RunRequest); world_size is then the launch's.
  dist::Launch* launch = nullptr;
  std::function<void(Capture&)> gather_ranks;
  std::vector<std::string> semantics;  // empty: every mode, lazy first
};

RulesMatrix compute_rules(const RulesRequest&, const ProgressFn& progress = {});
// The short text of a rule; empty for an unknown name.
std::string rule_explanation(const std::string& rule);

}  // namespace tv
