#include "ir/dtype.h"

#include <array>
#include <charconv>

namespace tv {
namespace {

struct DTypeNames {
  DType dtype;
  std::string_view short_name;
  std::string_view torch_name;
  int size;
};

constexpr std::array<DTypeNames, 10> kNames{{
    {DType::f64, "f64", "torch.float64", 8},
    {DType::f32, "f32", "torch.float32", 4},
    {DType::f16, "f16", "torch.float16", 2},
    {DType::bf16, "bf16", "torch.bfloat16", 2},
    {DType::i64, "i64", "torch.int64", 8},
    {DType::i32, "i32", "torch.int32", 4},
    {DType::i16, "i16", "torch.int16", 2},
    {DType::i8, "i8", "torch.int8", 1},
    {DType::ui8, "ui8", "torch.uint8", 1},
    {DType::b8, "b8", "torch.bool", 1},
}};

const DTypeNames& names(DType d) { return kNames[static_cast<int>(d)]; }

// Promotion category: bool < integer < floating, then width inside a category.
int category(DType d) { return d == DType::b8 ? 0 : is_floating(d) ? 2 : 1; }

}  // namespace

std::string_view short_name(DType d) { return names(d).short_name; }
std::string_view torch_name(DType d) { return names(d).torch_name; }
int element_size(DType d) { return names(d).size; }

std::optional<DType> dtype_from_short(std::string_view s) {
  for (const auto& n : kNames)
    if (n.short_name == s) return n.dtype;
  return std::nullopt;
}

std::optional<DType> dtype_from_torch(std::string_view s) {
  for (const auto& n : kNames)
    if (n.torch_name == s || n.torch_name.substr(6) == s) return n.dtype;
  return std::nullopt;
}

bool is_floating(DType d) {
  return d == DType::f64 || d == DType::f32 || d == DType::f16 || d == DType::bf16;
}
bool is_integral(DType d) { return !is_floating(d); }

DType promote(DType a, DType b) {
  if (a == b) return a;
  int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  // f16 with bf16 promotes to f32, as in torch.
  if ((a == DType::f16 && b == DType::bf16) || (a == DType::bf16 && b == DType::f16)) return DType::f32;
  if ((a == DType::ui8 && b == DType::i8) || (a == DType::i8 && b == DType::ui8)) return DType::i16;
  return element_size(a) >= element_size(b) ? a : b;
}

std::string Device::str() const {
  return kind == Kind::cpu ? std::string("cpu") : "cuda:" + std::to_string(index);
}

std::optional<Device> Device::parse(std::string_view s) {
  if (s == "cpu") return Device{Kind::cpu, 0};
  if (s == "cuda") return Device{Kind::cuda, 0};
  if (s.substr(0, 5) != "cuda:" || s.size() == 5) return std::nullopt;
  int index = 0;
  auto rest = s.substr(5);
  auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), index);
  if (ec != std::errc() || ptr != rest.data() + rest.size() || index < 0) return std::nullopt;
  return Device{Kind::cuda, index};
}

}  // namespace tv
