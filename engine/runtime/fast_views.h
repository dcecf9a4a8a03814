// Views made without ATen's dispatcher. A host-bound step runs about a thousand view ops (reshape,
// transpose, permute, expand, split, unbind); each at:: call passes the dispatcher's autograd and
// view-tracking layers, 0.3–0.8 µs, to make what, for a tensor autograd does not record, is a new
// TensorImpl over the same storage. Here that TensorImpl is made directly, as ATen's own
// alias_with_sizes_and_strides makes it: the same storage, dispatch keys, dtype and version
// counter, with the view's sizes, strides and storage offset.
// Contract: each function returns what the at:: call of its name returns (sizes, strides, storage
// offset, the storage shared), and is that call where the direct path does not apply: a tensor
// autograd would record (grad mode on and it requires grad), one that is not a dense strided CPU or
// CUDA tensor with storage, one with keys beyond a plain tensor's (Python dispatch,
// functionalization, conjugate or negative bits, names, quantization), a shape the view cannot
// take (reshaped then copies, as at::reshape does), or TV_FAST_VIEWS=0 in the environment (to
// compare). Dims may be negative, as in ATen; out-of-range dims and impossible shapes throw
// ATen's own errors (the at:: call runs).
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace tv::exec {

at::Tensor fast_reshape(const at::Tensor& t, at::IntArrayRef shape);  // at::reshape (a view where one exists)
at::Tensor fast_transpose(const at::Tensor& t, int64_t dim0, int64_t dim1);
at::Tensor fast_permute(const at::Tensor& t, at::IntArrayRef dims);
at::Tensor fast_unsqueeze(const at::Tensor& t, int64_t dim);
at::Tensor fast_expand(const at::Tensor& t, at::IntArrayRef shape);  // -1 keeps a dim
std::vector<at::Tensor> fast_unbind(const at::Tensor& t, int64_t dim);
std::vector<at::Tensor> fast_split(const at::Tensor& t, int64_t split_size, int64_t dim);

}  // namespace tv::exec
