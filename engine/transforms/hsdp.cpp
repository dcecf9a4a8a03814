#include "transforms/hsdp.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tv {

// The mesh only: the transform is fsdp's over a shard group (make_hsdp_transform, in fsdp.cpp), so
// what reads a mesh (the rules' renderings) does not bring the transforms with it.

std::vector<int> HybridMesh::shard_group(int rank) const {
  std::vector<int> out;
  for (int s = 0; s < shards; ++s) out.push_back(rank / shards * shards + s);
  return out;
}

std::vector<int> HybridMesh::replicate_group(int rank) const {
  std::vector<int> out;
  for (int r = 0; r < replicas; ++r) out.push_back(r * shards + shard_index(rank));
  return out;
}

HybridMesh hybrid_mesh(int world, int shard_group_size) {
  world = std::max(world, 1);
  const int default_size = world % 2 == 0 ? world / 2 : world;
  int s = shard_group_size > 0 ? shard_group_size : default_size;
  if (shard_group_size < 0 || s > world || world % s != 0)
    throw std::invalid_argument("hsdp: a shard group of " + std::to_string(shard_group_size) +
                                " ranks does not divide the world of " + std::to_string(world) +
                                " ranks into equal groups (use a divisor of " + std::to_string(world) +
                                ", e.g. --shard-group " + std::to_string(default_size) + ")");
  return {world / s, s};
}

void check_shard_group(const std::vector<std::string>& order, int world, int shard_group_size) {
  bool hybrid = std::find(order.begin(), order.end(), "hsdp") != order.end();
  if (!hybrid) {
    if (shard_group_size != 0)
      throw std::invalid_argument("a shard group (" + std::to_string(shard_group_size) +
                                  (shard_group_size == 1 ? " rank" : " ranks") +
                                  ") is hsdp's mesh, and the order has no hsdp (use --order jit,hsdp, or drop --shard-group)");
    return;
  }
  hybrid_mesh(world, shard_group_size);
}

}  // namespace tv
