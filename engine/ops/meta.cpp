#include "ops/meta.h"

#include <algorithm>

namespace tv::meta {

namespace {

std::string dims_text(const std::vector<int64_t>& dims) { return shape_text(dims); }

// 0: bool, 1: integer, 2: floating.
int category(DType d) { return d == DType::b8 ? 0 : is_floating(d) ? 2 : 1; }
int category(const Value& v) { return v.kind == Value::Kind::boolean ? 0 : v.kind == Value::Kind::integer ? 1 : 2; }

}  // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1)
      throw OpError("shapes " + shape_text(a) + " and " + shape_text(b) + " cannot be broadcast together (dim " +
                    std::to_string(i) + ": " + std::to_string(x) + " vs " + std::to_string(y) + ")");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

int64_t normalize_dim(int64_t dim, int64_t rank) {
  int64_t r = std::max<int64_t>(rank, 1);
  if (dim < -r || dim >= r)
    throw OpError("dim " + std::to_string(dim) + " is out of range for a tensor of rank " + std::to_string(rank) +
                  " (expected a dim in [" + std::to_string(-r) + ", " + std::to_string(r - 1) + "])");
  return dim < 0 ? dim + r : dim;
}

std::vector<int64_t> normalize_dims(const std::vector<int64_t>& dims, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t d : dims) {
    int64_t n = normalize_dim(d, rank);
    if (std::find(out.begin(), out.end(), n) != out.end())
      throw OpError("dim " + std::to_string(d) + " appears twice in " + dims_text(dims));
    out.push_back(n);
  }
  return out;
}

Shape reduction_shape(const Shape& shape, const std::vector<int64_t>& dims, bool keepdim) {
  Shape out;
  for (size_t i = 0; i < shape.size(); ++i) {
    bool reduced = std::find(dims.begin(), dims.end(), static_cast<int64_t>(i)) != dims.end();
    if (!reduced)
      out.push_back(shape[i]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

Shape matmul_shape(const Shape& a, const Shape& b) {
  auto mismatch = [&] {
    return OpError("matmul shapes " + shape_text(a) + " and " + shape_text(b) +
                   " do not match: inner dimensions differ");
  };
  if (a.empty() || b.empty())
    throw OpError("matmul needs tensors of rank >= 1, got " + shape_text(a) + " and " + shape_text(b));
  // Promote 1-D operands to matrices, remember to drop the added dims.
  Shape a2 = a.size() == 1 ? Shape{1, a[0]} : a;
  Shape b2 = b.size() == 1 ? Shape{b[0], 1} : b;
  if (a2.back() != b2[b2.size() - 2]) throw mismatch();
  Shape batch_a(a2.begin(), a2.end() - 2), batch_b(b2.begin(), b2.end() - 2);
  Shape out;
  try {
    out = broadcast_shapes(batch_a, batch_b);
  } catch (const OpError&) {
    throw OpError("matmul batch dimensions of " + shape_text(a) + " and " + shape_text(b) + " cannot be broadcast");
  }
  if (a.size() > 1) out.push_back(a2[a2.size() - 2]);
  if (b.size() > 1) out.push_back(b2.back());
  return out;
}

DType result_dtype(const std::vector<Value>& operands) {
  std::optional<DType> tensor;
  int number_category = -1;
  for (const auto& v : operands) {
    if (v.is_proxy() && v.proxy->is_tensor())
      tensor = tensor ? promote(*tensor, v.proxy->dtype) : v.proxy->dtype;
    else if (v.is_number())
      number_category = std::max(number_category, category(v));
    else if (!v.is_none())
      throw OpError("expected a tensor or a number, got " + python_text(v));
  }
  if (!tensor) throw OpError("expected at least one tensor operand");
  if (number_category > category(*tensor)) return number_category == 2 ? DType::f32 : DType::i64;
  return *tensor;
}

Device common_device(const std::vector<Value>& operands) {
  std::optional<Device> device, scalar_device;
  for (const auto& v : operands) {
    if (!v.is_proxy() || !v.proxy->is_tensor()) continue;
    const auto& p = *v.proxy;
    if (p.shape.empty() && p.device.kind == Device::Kind::cpu)
      scalar_device = p.device;
    else if (!device)
      device = p.device;
    else if (!(*device == p.device))
      throw OpError("tensors are on different devices: " + device->str() + " and " + p.device.str());
  }
  if (device) return *device;
  if (scalar_device) return *scalar_device;
  throw OpError("expected at least one tensor operand");
}

Shape common_shape(const std::vector<Value>& operands) {
  Shape out;
  for (const auto& v : operands)
    if (v.is_proxy() && v.proxy->is_tensor()) out = broadcast_shapes(out, v.proxy->shape);
  return out;
}

}  // namespace tv::meta
