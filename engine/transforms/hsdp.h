// The `hsdp` transform: hybrid sharding on a 2-D mesh of W = R x S ranks. fsdp within each shard
// group of S ranks (parameters sharded on dim 0 over the group, gathered in the forward, the
// gradient reduce-scattered over the group), ddp across the R shard groups (each gradient shard
// averaged by all-reduce over the replicate group: the ranks holding the same shard). It is what
// composing fsdp and ddp means; an order with both is refused (one-parameter-distribution).
// Contract:
//  - The mesh: rank r is shard r % S of replica r / S; its shard group is the S consecutive ranks
//    of its replica (group `..._ProcessGroup_2`), its replicate group the R ranks r % S, r % S + S,
//    ... (`..._ProcessGroup_3`). S is TransformContext::shard_group_size, or by default W / 2 when
//    W is even (2 replicas) and W otherwise.
//  - Stages: fsdp's ("fsdp pass", "fsdp backward (zero3)") over the shard group, then
//    "hsdp replicate (R ranks)" (the all-reduces of the gradient shards, one per shard, divided
//    by R) and "Sort Collectives".
//  - A rank holds fsdp_shard(mean gradient, r % S, S) (local_gradient).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "transforms/transform.h"

namespace tv {

std::unique_ptr<Transform> make_hsdp_transform();

struct HybridMesh {
  int replicas = 1;  // R: shard groups
  int shards = 1;    // S: ranks per shard group
  int shard_index(int rank) const { return rank % shards; }
  std::vector<int> shard_group(int rank) const;      // the ranks of rank's replica
  std::vector<int> replicate_group(int rank) const;  // the ranks holding rank's shard
};

// The mesh of `world` ranks with shard groups of `shard_group_size` (0: the default above).
// Throws std::invalid_argument when the size is below 1, above the world or does not divide it.
HybridMesh hybrid_mesh(int world, int shard_group_size);
// Checks a pipeline's shard group against its order and world: a size given for an order without
// hsdp, or one that does not divide the world, throws std::invalid_argument saying how to fix it.
void check_shard_group(const std::vector<std::string>& order, int world, int shard_group_size);

}  // namespace tv
