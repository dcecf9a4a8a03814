// Autograd: the forward/backward split of a computation trace, in Thunder's layout.
// Contract: split_forward_backward(c) returns
//  - an augmented forward (provenance "Grad transform pass"): c's statements, with symbols that
//    are differentiated through their decomposition (gelu, sdpa, symbols without a rule) replaced
//    by their subsymbols, returning
//    `{'output': ..., 'flat_args': [params], 'flat_output': (tensors,)}, ((saved tensors), (saved others))`;
//  - a backward `backward_fn(saved_for_backward, cotangents)` (same provenance): it unpacks
//    `C0, C1, = saved_for_backward`, one cotangent per tensor of flat_output, the saved values,
//    computes the vector-Jacobian products with the rules of transforms/grad_rules.h (ltorch ops),
//    accumulates the cotangents of values used several times with ltorch.add, drops what no
//    gradient needs, and returns one gradient per parameter of c (None where none is required).
// Saved values are what the backward reads of the forward, in order of first use.
// A parameter is differentiable when it is a floating tensor that requires grad: Proxy::requires_grad,
// or `requires_grad[i]` when given (parsed traces carry no requires_grad). Throws std::runtime_error
// when a differentiable statement has neither a rule nor subsymbols.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/trace.h"

namespace tv {

inline constexpr const char* kGradPassName = "Grad transform pass";

struct ForwardBackward {
  TracePtr forward;
  TracePtr backward;
  std::vector<ProxyPtr> saved_tensors;  // C0
  std::vector<ProxyPtr> saved_other;    // C1 (number proxies)
  int64_t saved_bytes = 0;              // sum of numel * element_size over saved_tensors
  std::vector<bool> requires_grad;      // per parameter of the computation, as decided
};

ForwardBackward split_forward_backward(const Trace& computation, std::vector<bool> requires_grad = {});

}  // namespace tv
