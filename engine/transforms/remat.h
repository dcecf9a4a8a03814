// The `remat` transform: rematerialization (engine/passes/remat.h) as a post-optimization hook,
// recorded as a "Rematerialization" stage of the forward and the backward.
#pragma once
#include <memory>

#include "transforms/transform.h"

namespace tv {

std::unique_ptr<Transform> make_remat_transform();

}  // namespace tv
