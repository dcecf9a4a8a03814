// Thunder's spellings: the names Thunder's printouts call engine ops by. Its torch executor writes
// `torch.reshape`, `torch.nn.functional.linear`, `torch.Tensor.expand`; its final traces call the
// prims' implementations `torch_div_prim_impl`, `torch_prims_reshape_impl`; its backward empties
// saved collections with `clear_mutable_collection`.
// Contract: spelled_op(name) is the registered op a spelling stands for (`torch.X` and
// `torch.nn.functional.X` -> `ltorch.X`, `torch_X_prim_impl` -> `prims.X`), or null; the passes
// read a spelling's traits through it. register_spellings() (called by ltorch::register_ops, after
// the families) gives the spellings that the engine runs the rule of the op they stand for, and
// registers the few with a rule of their own (`torch.nn.functional.smooth_l1_loss`). A spelling
// stays an opaque symbol (printed as it is, no meta), executable once it has a rule.
#pragma once
#include <string_view>

#include "ir/symbol.h"

namespace tv::ops {

const Symbol* spelled_op(std::string_view name);
void register_spellings();

}  // namespace tv::ops
