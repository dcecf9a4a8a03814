// Transforms: one interface with named hook points, applied in a fixed order whatever order the
// user wrote them in: transform_module (touch the module), pre_prologue (rewrite prologue and
// computation before autograd), autograd itself, post_optimization (rewrite the final forward and
// backward). Each transform declares what it claims (e.g. "parameter-distribution"), which the
// composition rules are made of. A hook records every trace it makes as a named stage.
// Contract: hooks never mutate a trace they were given; they return new ones through the history.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ir/trace.h"
#include "pipeline/stages.h"

namespace tv {
namespace jit {
struct Module;
}
namespace dist {
class Communicator;
}

// The state a transform reads. In the default (lazy) mode it is read at the first call; in
// capture-at-jit mode, what a transform applied after `jit` reads was frozen when jit() was called.
struct TransformContext {
  int world_size = 1;
  int rank = 0;
  Device device;
  dist::Communicator* communicator = nullptr;  // null when nothing is replayed (trace only)
  double bucket_size_mb = 25.0;                 // ddp gradient buckets
  bool zero3 = true;                            // fsdp: reshard after forward (zero-3) or not (zero-2)
  DType autocast_dtype = DType::bf16;
};

class Transform {
 public:
  virtual ~Transform() = default;
  virtual std::string name() const = 0;
  // What this transform takes ownership of; two transforms claiming the same thing conflict.
  virtual std::vector<std::string> claims() const { return {}; }

  virtual void transform_module(jit::Module&, const TransformContext&) const {}
  virtual void pre_prologue(StageHistory&, const TransformContext&) const {}
  virtual void post_optimization(StageHistory&, const TransformContext&) const {}
};

// A transform by name ("ddp", "fsdp", "autocast", "remat"); throws std::invalid_argument listing
// the known names. "jit" is not a transform but the point where the module is jitted.
std::unique_ptr<Transform> make_transform(const std::string& name);
std::vector<std::string> transform_names();  // every name make_transform accepts, plus "jit"

// Lets other modules (distributed) add transforms: the factory is called by make_transform.
using TransformFactory = std::unique_ptr<Transform> (*)();
void register_transform(const std::string& name, TransformFactory factory);

}  // namespace tv
