// Transforms: one interface with named hook points, applied in a fixed order whatever order the
// user wrote them in: transform_module (touch the module), pre_prologue (rewrite prologue and
// computation before autograd), autograd itself, post_optimization (rewrite the final forward and
// backward). Each transform declares what it claims (e.g. "parameter-distribution"), which the
// composition rules are made of, and what the replay must know of it: whether it distributes the
// parameters, which gradient a rank should hold, in which dtype it computes. A hook records every
// trace it makes as a named stage.
// Contract: hooks never mutate a trace they were given; they return new ones through the history.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "history/stages.h"
#include "ir/trace.h"
#include "transforms/semantics.h"

namespace at {
class Tensor;
}

namespace tv {
namespace jit {
struct Module;
}

// The claim of ddp and fsdp: how the parameters live on the ranks.
inline constexpr const char* kParameterDistribution = "parameter-distribution";

// The state a transform reads. Which consumer reads the module at the first call and which reads
// the snapshot jit() took is the semantics mode's (transforms/semantics.h).
struct TransformContext {
  int world_size = 1;
  int rank = 0;
  Device device;
  // Broadcasts a tensor from rank 0 in place over the world's communicator; empty when nothing is
  // replayed (trace only). Transforms that distribute parameters start every rank from rank 0's.
  std::function<void(at::Tensor&)> broadcast_from_rank0;
  double bucket_size_mb = 25.0;                 // ddp gradient buckets
  bool zero3 = true;                            // fsdp: reshard after forward (zero-3) or not (zero-2)
  int shard_group_size = 0;                     // hsdp: ranks per shard group; 0: the default (hsdp.h)
  DType autocast_dtype = DType::bf16;
  const SemanticsMode* semantics = nullptr;  // null: lazy
  std::string workaround;                    // "" or kWorkaroundProcessGroup
  ModuleState at_jit, at_call;               // set by the pipeline build from the order
  bool finds_process_group(StateConsumer) const;
  const SemanticsMode& mode() const;
};

// A group of ranks a transform's collectives run on besides the world (hybrid sharding's shard and
// replicate groups): its name as the traces write it, and its ranks in the world.
struct Subgroup {
  std::string name;
  std::vector<int> ranks;
};

class Transform {
 public:
  virtual ~Transform() = default;
  virtual std::string name() const = 0;
  // What this transform takes ownership of; two transforms claiming the same thing conflict.
  virtual std::vector<std::string> claims() const { return {}; }
  bool distributes_parameters() const;  // claims kParameterDistribution

  // The gradient this rank (context.rank of context.world_size) holds of a parameter whose
  // gradient averaged over the ranks is `mean` (for a transform that distributes parameters): the
  // mean itself, or fsdp's shard of it.
  virtual at::Tensor local_gradient(const at::Tensor& mean, const TransformContext& context) const;
  // The subgroups this rank belongs to, in the order every rank must form them (the world's
  // communicator makes them before the first call).
  virtual std::vector<Subgroup> subgroups(const TransformContext&) const { return {}; }
  // The dtype the transform computes in where it lowers precision (autocast), so the replay
  // checks the numbers within that dtype's tolerance.
  virtual std::optional<DType> computes_in(const TransformContext&) const { return std::nullopt; }

  virtual void transform_module(jit::Module&, const TransformContext&) const {}
  virtual void pre_prologue(StageHistory&, const TransformContext&) const {}
  virtual void post_optimization(StageHistory&, const TransformContext&) const {}
};

// A transform by name ("ddp", "fsdp", "hsdp", "autocast", "remat"); throws std::invalid_argument listing
// the known names. "jit" is not a transform but the point where the module is jitted.
std::unique_ptr<Transform> make_transform(const std::string& name);
std::vector<std::string> transform_names();  // every name make_transform accepts, "jit" first
// Broadcasts every parameter and buffer of `m` in place with `broadcast` (ddp, fsdp).
void broadcast_module(jit::Module& m, const std::function<void(at::Tensor&)>& broadcast);

// Lets other modules (distributed) add transforms: the factory is called by make_transform.
using TransformFactory = std::unique_ptr<Transform> (*)();
void register_transform(const std::string& name, TransformFactory factory);

}  // namespace tv
