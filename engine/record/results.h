// Replay results: what one run of a pipeline over W ranks produced, and how two runs compare.
// Contract: plain data, no tensors: statistics are computed where the tensors live (on the
// device) and only numbers are kept, so results can be saved, loaded and shown anywhere. Names are
// canonical ("output[0]", "grad[fc1.weight]"), so two pipelines' results line up by name.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "history/stages.h"
#include "ir/dtype.h"
#include "record/verdict.h"

namespace tv {

// Relative tolerance per dtype: f64 1e-10, f32 1e-5, f16 1e-2, bf16 2e-2.
double tolerance(DType);
// The tolerance of a value that is a sum of `summed_terms` partial results (ranks): rounding errors
// of a sum of n terms grow like sqrt(n), and the dtype's tolerance covers two.
double tolerance(DType, int64_t summed_terms);

struct TensorStats {
  std::vector<int64_t> shape;
  DType dtype = DType::f32;
  double min = 0, max = 0, mean = 0;
  int64_t nan_count = 0, inf_count = 0;
};

// One named tensor of a run checked against the eager reference.
struct TensorCheck {
  std::string name;       // "output[0]", "grad[weight]"
  TensorStats stats;
  double max_abs = 0;     // against the reference
  double max_rel = 0;
  double tolerance = 0;   // relative tolerance used for this dtype
  bool pass = true;
  std::optional<TensorStats> reference;  // the reference value's statistics (absent in older captures)
  std::string proxy;      // the final trace's value it is, "forward:t6" or "backward:t31"; "" when not known
};

struct SymbolTiming {
  std::string trace;      // "forward" or "backward"
  int index = 0;          // top-level bound symbol index in that trace
  std::string symbol;     // "ltorch.linear"
  std::string output;     // first output's name, "" when none
  double microseconds = 0;
  bool device_timer = false;  // measured with CUDA events
  double start_microseconds = 0;  // since the trace's run began (its first bound symbol)
};

// The step replayed as one CUDA graph (replay/cuda_graph.h), next to the plain step.
struct CudaGraphRun {
  bool ran = false;                 // captured and replayed
  int steps = 0;                    // calls each time is the mean of
  double step_ms = 0;               // the executor's step, per call (0 when not measured)
  double graph_ms = 0;              // one replay of the captured graph, per call
  double max_abs_difference = 0;    // between the replay's outputs and gradients and the step's
  // The largest of |replay - step| / max(1, largest |step|) over those tensors. A capture written
  // before this field reads it as max_abs_difference (never smaller).
  double max_relative_difference = 0;
  std::string error;                // why it did not run; "" when it ran
  // Ran, and its numbers are the step's: a relative difference of at most 1e-3. The graph replays
  // the very kernels the step launched, but some (the memory-efficient attention backward) sum in
  // an order that varies between calls, so a large model's gradients differ by rounding.
  bool matches() const;
  // One line: "step 46.868 ms, as one graph 6.674 ms (0.142x), mean of 20 calls each; largest
  // difference from the step's outputs and gradients 0", or "not run: <why>".
  std::string describe() const;
};

struct RankResult {
  int rank = 0;
  std::vector<TensorCheck> outputs;
  std::vector<TensorCheck> gradients;
  std::map<std::string, TensorStats> proxies;  // per-proxy statistics, by "kind:name" ("forward:t16")
  std::vector<SymbolTiming> timings;
  std::string first_non_finite;               // the first bound symbol that produced NaN/Inf
  std::optional<CudaGraphRun> cuda_graph;     // when the replay was asked to run the step as a CUDA graph
  std::string error;                          // empty when the run succeeded
  bool pass() const;
};

struct PipelineSpec {
  std::vector<std::string> order;  // {"jit", "ddp"}: ddp(jit(m))
  std::string semantics = "lazy";  // who reads module state when (transforms/semantics.h)
  std::string workaround;          // "" or "process-group"
  int world_size = 1;
  std::string device = "cpu";
  int shard_group = 0;             // hsdp: ranks per shard group (0: its default)
  std::string label() const;       // "jit,ddp" (+ " thunder-2024-03" + " workaround process-group" + " shard group 2")
  // What its replay's checks compare with: "Lightning Thunder's results" for a recorded Thunder call
  // (order thunder.jit, ...), else "LibTorch eager".
  std::string reference() const;
};

struct Replay {
  std::vector<RankResult> ranks;
  bool pass() const;
};

// How two pipelines compare: stage by stage (StageComparison, history/stages.h) and numerically.

struct NumericComparison {
  int rank = 0;
  std::string name;
  double max_abs = 0, max_rel = 0;
  bool pass = true;
};

struct Comparison {
  int left = 0, right = 1;  // pipeline indices
  std::vector<StageComparison> stages;
  std::vector<NumericComparison> numbers;
  bool traces_equal = false;   // final traces canonically equal for every kind
  bool numbers_equal = false;
  Verdict verdict = Verdict::not_comparable;
  std::string why;             // one line: what differs, or which side stopped the comparison and why
};

}  // namespace tv
