// Shape, dtype and device inference shared by the prims' meta functions.
// Contract: pure functions of metadata; each throws OpError with a message naming the offending
// shapes, dims or dtypes. Broadcasting follows numpy (align right, 1 stretches); a Python number
// never changes a tensor's dtype unless its kind is higher (int tensor with float number gives
// f32, bool tensor with int number gives i64).
#pragma once
#include <cstdint>
#include <vector>

#include "ir/builder.h"

namespace tv::meta {

using Shape = std::vector<int64_t>;

// numpy broadcasting of two shapes: [2, 1, 4] and [3, 1] give [2, 3, 4].
Shape broadcast_shapes(const Shape& a, const Shape& b);
// A dim in [-rank, rank) made non-negative; `rank` 0 accepts -1 and 0 (as torch does).
int64_t normalize_dim(int64_t dim, int64_t rank);
// Every dim normalised, duplicates refused; order kept.
std::vector<int64_t> normalize_dims(const std::vector<int64_t>& dims, int64_t rank);
// The shape left after reducing `dims` (already normalised); keepdim leaves 1s.
Shape reduction_shape(const Shape& shape, const std::vector<int64_t>& dims, bool keepdim);
// torch.matmul's shape rule: 1-D, 2-D and broadcast batch dims.
Shape matmul_shape(const Shape& a, const Shape& b);

// The dtype of an elementwise op over tensors and Python numbers (at least one tensor).
DType result_dtype(const std::vector<Value>& operands);
// The one device of the tensor operands; 0-dim cpu tensors may join any device.
Device common_device(const std::vector<Value>& operands);
// The broadcast shape of the tensor operands (numbers broadcast as scalars).
Shape common_shape(const std::vector<Value>& operands);

}  // namespace tv::meta
