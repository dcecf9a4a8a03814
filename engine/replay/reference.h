// Who computes the numbers a replay is checked against. A light header (no ATen): requests that
// carry a reference (session/run.h) are included where LibTorch's headers are not.
// Contract: an empty `compute` means eager_reference (replay/eager.h); a set `cotangent_seed` makes
// every rank draw its cotangents from that seed (a stored reference holds one set of gradients),
// otherwise rank r draws from the replay's seed + r.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace at {
class Tensor;
}

namespace tv {
namespace jit {
struct Module;
}

struct EagerResult;

// eager_reference's signature.
using ReferenceFn = std::function<EagerResult(const jit::Module& module, const std::vector<at::Tensor>& inputs,
                                              const std::vector<at::Tensor>& output_cotangents)>;

struct Reference {
  ReferenceFn compute;
  std::optional<uint64_t> cotangent_seed;
};

}  // namespace tv
