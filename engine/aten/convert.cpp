#include "aten/convert.h"

#include <c10/core/DefaultDtype.h>

namespace tv::aten {

at::ScalarType to_scalar_type(DType d) {
  switch (d) {
    case DType::f64: return at::kDouble;
    case DType::f32: return at::kFloat;
    case DType::f16: return at::kHalf;
    case DType::bf16: return at::kBFloat16;
    case DType::i64: return at::kLong;
    case DType::i32: return at::kInt;
    case DType::i16: return at::kShort;
    case DType::i8: return at::kChar;
    case DType::ui8: return at::kByte;
    case DType::b8: return at::kBool;
  }
  return at::kFloat;
}

std::optional<DType> dtype_of(at::ScalarType s) {
  switch (s) {
    case at::kDouble: return DType::f64;
    case at::kFloat: return DType::f32;
    case at::kHalf: return DType::f16;
    case at::kBFloat16: return DType::bf16;
    case at::kLong: return DType::i64;
    case at::kInt: return DType::i32;
    case at::kShort: return DType::i16;
    case at::kChar: return DType::i8;
    case at::kByte: return DType::ui8;
    case at::kBool: return DType::b8;
    default: return std::nullopt;
  }
}

c10::Device to_device(const Device& d) {
  if (d.kind == Device::Kind::cuda) return c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(d.index));
  return c10::Device(c10::DeviceType::CPU);
}

Device from_device(const c10::Device& d) {
  Device out;
  if (d.is_cuda()) {
    out.kind = Device::Kind::cuda;
    out.index = d.has_index() ? d.index() : 0;
  }
  return out;
}

DType default_dtype() {
  return dtype_of(c10::typeMetaToScalarType(c10::get_default_dtype())).value_or(DType::f32);
}

}  // namespace tv::aten
