// register_ops(): registers every prim and ltorch symbol exactly once, whichever thread asks first.
#include <mutex>

#include "ops/ltorch.h"
#include "ops/op_utils.h"
#include "ops/prims.h"

namespace tv::ltorch {

void register_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    prims::register_prims();
    ops::register_elementwise();
    ops::register_shape();
    ops::register_reduction();
    ops::register_nn();
    ops::register_creation();
  });
}

}  // namespace tv::ltorch
