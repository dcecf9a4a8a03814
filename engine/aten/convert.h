// Conversions between the IR's dtypes and devices and ATen's: the one mapping that the executor
// (engine/exec) and the module capture (engine/jit) both use.
// Contract: to_scalar_type and dtype_of are inverse on the dtypes the IR knows; dtype_of gives
// nullopt for a ScalarType outside them (each caller says what that means in its own error).
// to_device/from_device map cpu and cuda:N (a CUDA device without an index is cuda:0).
// default_dtype is torch's default dtype now (torch.set_default_dtype), what a factory without a
// dtype makes: a prologue's cache_info reports it.
#pragma once
#include <ATen/ATen.h>

#include <optional>

#include "ir/dtype.h"

namespace tv::aten {

at::ScalarType to_scalar_type(DType);
std::optional<DType> dtype_of(at::ScalarType);
c10::Device to_device(const Device&);
Device from_device(const c10::Device&);
DType default_dtype();

}  // namespace tv::aten
