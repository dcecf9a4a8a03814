// A model rebuilt from a capture: the module a capture's acquired traces describe, so that a model
// recorded from Python (or by Lightning Thunder), whose Python class the engine cannot run, is
// traced again under any transform order.
// Contract: the prologue says what the module holds: its parameters and buffers
// (`module.get_parameter('fc1.weight')`, `get_buffer`) with the shape, dtype, device and
// requires_grad their checks state; the inputs (`args[i]` and their checks); the attributes
// (`module.training`, `get_submodule('bn').momentum` and the value their checks expect). The
// computation's top-level statements are the forward: replayed op by op through the builder, each
// under its source line, so acquisition and every transform see the program the capture recorded.
// Weights and inputs: the program's `tensors` when it has them ("parameter:fc1.weight",
// "buffer:bn.running_mean", "input:0" for the first input the prologue unpacks: what a capture's
// tensors file holds, replay/tensor_file.h), checked against the shape and dtype the prologue
// states; every one of them or none. Without them they are made from the `seed` parameter (floating
// parameters small normals, running variances ones, other buffers and integer tensors zeros), so
// the traces are the program's and the numbers are not the user's. `device` moves everything
// (default: as recorded). Throws std::invalid_argument naming the statement when the traces do not
// describe a module so (an op the engine cannot trace, an input without its getter).
#pragma once
#include <functional>
#include <map>
#include <string>

#include <memory>

#include "ir/trace.h"
#include "jit/module.h"

namespace tv::jit {

struct CapturedProgram {
  std::string name;      // the model's name as the capture records it ("MyNet")
  TracePtr prologue;     // the acquired prologue
  TracePtr computation;  // the acquired forward computation
  // The recorded weights and inputs, when stored (see above); null when not.
  std::shared_ptr<const std::map<std::string, at::Tensor>> tensors;
};

// Builds the module for model parameters `seed` and `device` (any other throws).
using ModelFactory = std::function<Module(const std::map<std::string, std::string>& params)>;

// The factory of `program`'s module; the program is checked now (a first build, on the meta device).
ModelFactory captured_model(CapturedProgram program);

}  // namespace tv::jit
