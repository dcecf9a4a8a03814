// ATen fallbacks: an op with no native rule is recorded as the dispatcher's operator itself, one
// bound symbol named by its Python spelling, `torch.ops.<namespace>.<name>.<overload>` ("default"
// for the unnamed overload; `aten`, or a library's such as `torchvision` whose operators the
// process has loaded), with the trait "fallback".
// Contract:
//  - fallback_symbol(name) registers the symbol on first use (an opaque one the parser made is
//    upgraded): its meta function runs the operator on meta tensors (on CPU tensors of ones or zeros
//    where ATen has no meta kernel for it) and gives its outputs the inputs' device; its gradient
//    rule records one `ltorch.fallback_vjp(name, args, kwargs, cotangents, wants)`, whose execution
//    recomputes the operator under LibTorch's autograd and returns the gradients of the arguments
//    that want one (floating tensors that require grad and that the operator does not write into
//    other than as an in-place op's self; None for the others); its execution rule calls the
//    operator through the dispatcher.
//  - fallback_stack lays a call's values out as the operator's schema wants them: positional ones,
//    then keyword ones by name, then the schema's defaults; an int given for a float becomes one.
//  - A name that is no operator of this process's dispatcher, or values the schema does not take,
//    are an OpError that names the operator and the argument.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>

#include "ir/symbol.h"

namespace tv::ops {

inline constexpr std::string_view kFallbackPrefix = "torch.ops.";
inline constexpr std::string_view kFallbackVjp = "ltorch.fallback_vjp";

bool is_fallback_name(std::string_view symbol_name);
// The dispatcher's operator of a fallback symbol name ("torch.ops.aten.convolution.default",
// "torch.ops.torchvision.roi_align.default").
c10::OperatorHandle fallback_operator(std::string_view symbol_name);
const Symbol& fallback_symbol(std::string_view symbol_name);

// Whether the operator writes into argument i, and whether that argument can have a gradient: one it
// writes into only as an in-place op's self (returned), not as a running statistic (not returned).
bool fallback_writes(const c10::FunctionSchema& schema, size_t i);
bool fallback_differentiable(const c10::FunctionSchema& schema, size_t i);

std::vector<c10::IValue> fallback_stack(const c10::FunctionSchema& schema, std::vector<c10::IValue> positional,
                                        std::vector<std::pair<std::string, c10::IValue>> keywords);
// A sequence argument, its items converted one by one, as the list the operator takes: ints, bools,
// floats (numbers of mixed kinds), tensors, or tensors and Nones (Tensor?[]); OpError otherwise.
c10::IValue fallback_list(const std::vector<c10::IValue>& items);
// A layout or memory format spelled as the recorder writes it ("torch.strided", "torch.channels_last").
std::optional<c10::IValue> fallback_enum(std::string_view spelling);

}  // namespace tv::ops
