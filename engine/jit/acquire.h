// Acquisition: runs a Module's forward on proxies and yields Thunder's three traces.
// Contract: `acquire` returns
//  - prologue(*args, **kwargs): checks the argument counts, unpacks inputs (args[i]), the module
//    (globals()['__function_obj'] -> get_thunder_module) and its parameters (get_parameter) and
//    buffers (get_buffer), checks inputs' metadata, attributes (top level, then per submodule via
//    get_submodule, each submodule's parameters checked after its attributes), the cache_info
//    block, and returns ((inputs..., parameters and buffers sorted by proxy name), ());
//  - computation(inputs..., sorted parameters): the ltorch calls of the forward, one header comment
//    per model line, `return (outputs...,)`;
//  - epilogue(outputs...): returns the output (a tuple when there are several).
// The three traces share proxies. Parameter proxies carry the module's layout over ranks (replicated
// when ddp set use_ddp, fully_sharded for use_fsdp; buffers none). Op errors propagate as OpError naming the op, the argument
// shapes and the model's file:line; a wrong number of inputs throws std::invalid_argument.
#pragma once
#include <vector>

#include "ir/trace.h"
#include "jit/module.h"

namespace tv::jit {

struct Acquired {
  TracePtr prologue;
  TracePtr computation;
  TracePtr epilogue;
};

// Registers ltorch's ops and the prologue's symbols (prims.check_*, get_thunder_module,
// _get_cache_info, get_submodule, get_buffer). Idempotent; acquire calls it.
void register_jit_symbols();

Acquired acquire(const Module& module, const std::vector<TensorMeta>& inputs);
// With the module's example inputs.
Acquired acquire(const Module& module);

}  // namespace tv::jit
