// Element types and devices of tensor proxies.
// Contract: the short spelling ("f32", "cuda:0") is what Thunder prints in type comments; the torch
// spelling ("torch.float32") is what prologue checks print. Both parse back to the same value.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace tv {

enum class DType { f64, f32, f16, bf16, i64, i32, i16, i8, ui8, b8 };

std::string_view short_name(DType);                  // "f32"
std::string_view torch_name(DType);                  // "torch.float32"
std::optional<DType> dtype_from_short(std::string_view);
std::optional<DType> dtype_from_torch(std::string_view);  // accepts "torch.float32" and "float32"
bool is_floating(DType);
bool is_integral(DType);  // bool counts as integral here
int element_size(DType);
// Result type of a binary op between two tensors (torch.result_type on tensors of equal rank).
DType promote(DType, DType);

struct Device {
  enum class Kind { cpu, cuda } kind = Kind::cpu;
  int index = 0;

  std::string str() const;  // "cpu" or "cuda:0"
  static std::optional<Device> parse(std::string_view);  // "cpu", "cuda", "cuda:1"
  bool operator==(const Device&) const = default;
};

}  // namespace tv
