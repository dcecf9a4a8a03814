// Replay: runs a built pipeline's final traces on one rank and checks them against eager LibTorch.
// Contract: `replay_rank` executes prologue → forward → backward with the executor on the module's
// weights and inputs (the step of replay/step.h, which the Python bindings run too), with
// cotangents drawn from `cotangent_seed` + rank (ones for a scalar loss), and compares every
// output and every parameter gradient with `eager_reference` on the same weights, inputs and
// cotangents (check_against_reference). Per-proxy statistics and per-bound-symbol times are
// recorded; the first bound symbol that produced NaN/Inf is named. A failure is reported in
// RankResult::error, never thrown. With `cuda_graph_steps` the step is then also replayed as a CUDA
// graph. Tolerances are relative to the largest magnitude of the reference (see tolerance()), with
// an absolute floor of a tenth of the tolerance for references that are zero up to noise. A
// gradient summed over W ranks (DDP's all-reduce, FSDP's reduce-scatter) sums in another order
// than eager's one batch: its tolerance grows like the rounding of a sum, sqrt(W/2)·tolerance(dtype)
// (W ≤ 2: unchanged), so world 64 allows 5.7e-5 in f32 and a wrong gradient still fails.
#pragma once
#include <cstdint>
#include <any>
#include <functional>
#include <string>

#include "jit/module.h"
#include "pipeline/pipeline.h"
#include "replay/reference.h"
#include "record/results.h"

namespace at {
class Tensor;
}

namespace tv {

// tolerance(DType) and tolerance(DType, summed_terms): record/results.h.

// Shape, dtype, min/max/mean of the finite values and NaN/Inf counts, computed where `t` lives.
TensorStats tensor_stats(const at::Tensor& t);
// `got` against the reference `want` with the rule above (tolerance of got's dtype and the number
// of ranks summed into it, at least `min_tolerance`); NaN where `want` has NaN and `want`'s own
// infinities count as equal; an undefined `want` or a shape mismatch fails with infinite errors.
TensorCheck check_against_reference(const std::string& name, const at::Tensor& got, const at::Tensor& want,
                                    double min_tolerance = 0, int64_t summed_terms = 1);

struct ReplayOptions {
  Device device;
  uint64_t cotangent_seed = 1234;
  bool record_proxy_stats = true;
  bool record_timings = true;
  // Runs a collective-aware executor: extra setup for distributed rules (set by engine/dist users).
  std::function<void(std::any&)> prepare_executor;
  // How the reference gradient of each parameter is turned into what this rank must hold
  // (identity by default; DDP averages over ranks, FSDP takes this rank's shard).
  std::function<at::Tensor(const std::string& name, const at::Tensor& reference)> expected_grad;
  // Lower bound on every relative tolerance (autocast computes in bf16 against an f32 reference).
  double min_tolerance = 0;
  // How many ranks' partial gradients each parameter gradient sums (DDP, FSDP: the world size).
  int64_t summed_ranks = 1;
  // The module eager runs on (unsharded weights); the replayed module when null.
  const jit::Module* reference_module = nullptr;
  // Who computes the reference (replay/eager.h): eager_reference unless set; a reference with its own
  // cotangent seed draws every rank's cotangents from it.
  Reference reference;
  // When > 0 (CUDA, one rank): after the checks, the step is also captured as a CUDA graph and
  // replayed (replay/cuda_graph.h); RankResult::cuda_graph holds both times per step, the mean of
  // this many calls, and how far the graph's numbers are from the step's.
  int cuda_graph_steps = 0;
  // The executor runs fusion regions' pointwise runs as generated kernels (exec/executor.h);
  // false runs every member on its own, to tell a kernel's numbers from the members'.
  bool generated_kernels = true;
};

RankResult replay_rank(const jit::Module& module, const BuiltPipeline& built, int rank, const ReplayOptions& options);

}  // namespace tv
