// Conversions between the IR's dtypes/devices and ATen's (internal to engine/exec; .cpp files
// only, after <ATen/ATen.h>).
// Contract: to_scalar_type/from_scalar_type are inverse on the dtypes the IR knows; a ScalarType
// outside them throws ExecError.
#pragma once
#include <ATen/ATen.h>

#include "exec/runtime.h"

namespace tv::exec {

at::ScalarType to_scalar_type(DType);
DType from_scalar_type(at::ScalarType);
c10::Device to_device(const Device&);
Device from_device(const c10::Device&);
// "cpu f32[2, 5]"
std::string tensor_text(const at::Tensor&);
std::string shape_str(at::IntArrayRef shape);  // "(2, 5)" as Python prints a tuple

}  // namespace tv::exec
