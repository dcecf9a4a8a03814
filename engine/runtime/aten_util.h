// ATen helpers of execution rules and the executor (.cpp files only). The dtype and device
// mapping is engine/aten/convert.h's; from_scalar_type throws ExecError for a ScalarType the IR
// does not know.
#pragma once
#include <ATen/ATen.h>

#include "aten/convert.h"
#include "runtime/value.h"

namespace tv::exec {

using aten::from_device;
using aten::to_device;
using aten::to_scalar_type;
DType from_scalar_type(at::ScalarType);
// "cpu f32[2, 5]"
std::string tensor_text(const at::Tensor&);
std::string shape_str(at::IntArrayRef shape);  // "(2, 5)" as Python prints a tuple

}  // namespace tv::exec
