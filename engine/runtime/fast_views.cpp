#include "runtime/fast_views.h"

#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/InferSize.h>
#include <ATen/TensorUtils.h>
#include <ATen/WrapDimUtils.h>
#include <c10/core/GradMode.h>
#include <c10/core/TensorImpl.h>

#include <cstdlib>
#include <cstring>

namespace tv::exec {
namespace {

bool switched_on() {
  static const bool on = [] {
    const char* v = std::getenv("TV_FAST_VIEWS");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}

// Whether a view of t may be made directly.
bool direct(const at::Tensor& t) {
  if (!switched_on() || !t.defined() || t.layout() != at::kStrided || !(t.is_cpu() || t.is_cuda())) return false;
  if (!t.has_storage() || t.is_quantized() || t.is_conj() || t.is_neg() || t.has_names()) return false;
  if (c10::GradMode::is_enabled() && t.requires_grad()) return false;
  const c10::DispatchKeySet keys = t.key_set();
  if (keys.has(c10::DispatchKey::Python) || keys.has(c10::DispatchKey::Functionalize)) return false;
  return typeid(*t.unsafeGetTensorImpl()) == typeid(c10::TensorImpl);  // no subclass (batched, wrapped, nested)
}

at::Tensor alias(const at::Tensor& t, at::IntArrayRef sizes, at::IntArrayRef strides, int64_t offset) {
  const c10::TensorImpl* base = t.unsafeGetTensorImpl();
  auto impl = c10::make_intrusive<c10::TensorImpl>(c10::TensorImpl::VIEW, c10::Storage(base->storage()), base->key_set(),
                                                   base->dtype());
  impl->set_sizes_and_strides(sizes, strides);
  impl->set_storage_offset(offset);
  impl->set_version_counter(base->version_counter());
  return at::Tensor(std::move(impl));
}

}  // namespace

at::Tensor fast_reshape(const at::Tensor& t, at::IntArrayRef shape) {
  if (!direct(t)) return t.reshape(shape);
  at::DimVector sizes;
  try {
    sizes = at::infer_size_dv(shape, t.numel());
  } catch (const std::exception&) {
    return t.reshape(shape);  // ATen's error for a shape the elements do not fill (a c10::Error)
  }
  auto strides = at::detail::computeStride(t.sizes(), t.strides(), sizes);
  if (!strides) return t.reshape(shape);  // no view: a copy, as at::reshape makes it
  return alias(t, sizes, *strides, t.storage_offset());
}

at::Tensor fast_transpose(const at::Tensor& t, int64_t dim0, int64_t dim1) {
  if (!direct(t) || t.dim() == 0) return t.transpose(dim0, dim1);
  const int64_t n = t.dim();
  dim0 = at::maybe_wrap_dim(dim0, n);
  dim1 = at::maybe_wrap_dim(dim1, n);
  at::DimVector sizes(t.sizes().begin(), t.sizes().end()), strides(t.strides().begin(), t.strides().end());
  std::swap(sizes[dim0], sizes[dim1]);
  std::swap(strides[dim0], strides[dim1]);
  return alias(t, sizes, strides, t.storage_offset());
}

at::Tensor fast_permute(const at::Tensor& t, at::IntArrayRef dims) {
  const int64_t n = t.dim();
  if (!direct(t) || static_cast<int64_t>(dims.size()) != n) return t.permute(dims);
  at::DimVector sizes(n), strides(n);
  std::vector<bool> seen(n, false);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t d = at::maybe_wrap_dim(dims[i], n);
    if (seen[d]) return t.permute(dims);  // (ATen's error for a repeated dim)
    seen[d] = true;
    sizes[i] = t.size(d);
    strides[i] = t.stride(d);
  }
  return alias(t, sizes, strides, t.storage_offset());
}

at::Tensor fast_unsqueeze(const at::Tensor& t, int64_t dim) {
  if (!direct(t)) return t.unsqueeze(dim);
  const int64_t n = t.dim();
  dim = at::maybe_wrap_dim(dim, n + 1);
  at::DimVector sizes(t.sizes().begin(), t.sizes().end()), strides(t.strides().begin(), t.strides().end());
  // ATen's stride for the new dim: the size times stride of the dim it precedes (1 at the end).
  const int64_t stride = dim >= n ? 1 : sizes[dim] * strides[dim];
  sizes.insert(sizes.begin() + dim, 1);
  strides.insert(strides.begin() + dim, stride);
  return alias(t, sizes, strides, t.storage_offset());
}

at::Tensor fast_expand(const at::Tensor& t, at::IntArrayRef shape) {
  if (!direct(t) || shape.size() < static_cast<size_t>(t.dim())) return t.expand(shape);
  auto geometry = at::inferExpandGeometry_dimvector(t.sizes(), t.strides(), shape);
  return alias(t, geometry.sizes, geometry.strides, t.storage_offset());
}

std::vector<at::Tensor> fast_unbind(const at::Tensor& t, int64_t dim) {
  if (!direct(t) || t.dim() == 0) return at::unbind(t, dim);
  dim = at::maybe_wrap_dim(dim, t.dim());
  at::DimVector sizes(t.sizes().begin(), t.sizes().end()), strides(t.strides().begin(), t.strides().end());
  const int64_t count = sizes[dim], step = strides[dim];
  sizes.erase(sizes.begin() + dim);
  strides.erase(strides.begin() + dim);
  std::vector<at::Tensor> out;
  out.reserve(count);
  for (int64_t i = 0; i < count; ++i) out.push_back(alias(t, sizes, strides, t.storage_offset() + i * step));
  return out;
}

std::vector<at::Tensor> fast_split(const at::Tensor& t, int64_t split_size, int64_t dim) {
  if (!direct(t) || t.dim() == 0 || split_size <= 0) return at::split(t, split_size, dim);
  dim = at::maybe_wrap_dim(dim, t.dim());
  const int64_t length = t.size(dim), step = t.stride(dim);
  // ATen gives one empty piece for an empty dim, and ceil(length / split_size) otherwise.
  const int64_t count = length == 0 ? 1 : (length + split_size - 1) / split_size;
  at::DimVector sizes(t.sizes().begin(), t.sizes().end());
  std::vector<at::Tensor> out;
  out.reserve(count);
  for (int64_t i = 0; i < count; ++i) {
    sizes[dim] = std::min(split_size, length - i * split_size);
    out.push_back(alias(t, sizes, t.strides(), t.storage_offset() + i * split_size * step));
  }
  return out;
}

}  // namespace tv::exec
