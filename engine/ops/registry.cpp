// register_ops(): registers every prim and ltorch op (meta, decomposition, gradient and execution rule)
// and Thunder's spellings of them exactly once, whichever thread asks first.
#include <mutex>

#include "ops/ltorch.h"
#include "ops/op_utils.h"
#include "ops/prims.h"
#include "ops/spellings.h"

namespace tv::ltorch {

void register_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    prims::register_prims();
    ops::register_elementwise();
    ops::register_shape();
    ops::register_reduction();
    ops::register_linalg();
    ops::register_nn();
    ops::register_creation();
    ops::register_spatial();
    ops::register_recurrent();
    ops::register_indexing();
    ops::register_interpolate();
    ops::register_spellings();
  });
}

}  // namespace tv::ltorch
