// The `fsdp` transform: fully sharded data parallelism (ZeRO-3 by default, ZeRO-2 when
// TransformContext::zero3 is false).
// Contract:
//  - claims "parameter-distribution"; a rank holds its shard of the mean gradient (local_gradient).
//  - transform_module: broadcasts the parameters from rank 0 (when replayed), then shards
//    every parameter on dim 0: dim 0 padded with zeros to a multiple of W, rank r keeps rows
//    [r*S, (r+1)*S), S = ceil(N/W) (fsdp_shard); sets use_fsdp=True. The acquired prologue then
//    checks the sharded shapes and the computation takes the shards.
//  - pre_prologue (stage "fsdp pass"): before the first use of each sharded parameter the
//    computation gathers it: torch_all_gather_prim_impl(shard, <group>, True, 0) -> FUTURE ->
//    torch_wait_prim_impl -> ltorch.split keeping the first N rows (drops the padding) ->
//    ltorch.reshape when the full shape is not the gathered one (0-d parameters).
//  - autograd differentiates through the gather (collectives.h): split's rule pads the gradient
//    with zeros, all_gather's rule divides by W and reduce-scatters it to this rank's shard.
//  - post_optimization (stage "fsdp backward (zero3)" or "(zero2)"): zero-2 keeps the gathered
//    parameters saved for backward; zero-3 saves the shards instead and re-gathers them at the
//    top of the backward (the forward frees the full parameters after their last use).
// This transform keeps the full shapes between its hooks: use one instance per pipeline build.
#pragma once
#include <memory>

#include "transforms/transform.h"

namespace at {
class Tensor;
}

namespace tv {

// hybrid: hsdp's transform (hsdp.h), fsdp over this rank's shard group of the mesh, then the
// gradient shards averaged across the replicas.
std::unique_ptr<Transform> make_fsdp_transform(bool hybrid = false);

// Rank `rank`'s shard of `full` over `world` ranks: rows [rank*S, (rank+1)*S) of `full` padded
// with zero rows to W*S rows on dim 0 (S = ceil(N/W)); a 0-d tensor counts as [1].
at::Tensor fsdp_shard(const at::Tensor& full, int rank, int world);

}  // namespace tv
