// Shape ltorch ops: reshape/view, transpose/permute, unsqueeze/expand/broadcast_in_dim, split, cat,
// stack (unsqueeze each, cat) and unbind (a slice and a reshape per piece).
// Each resolves torch conveniences (-1 sizes, negative dims) and records a concrete prim:
// `ltorch.reshape(t5, (-1, 10))` -> `prims.reshape(t5, (2, 10))`,
// `ltorch.permute(t, (1, 0))` -> `prims.transpose(t, (1, 0))`, unsqueeze/expand -> broadcast_in_dim.
#include "ops/ltorch.h"
#include "ops/meta.h"
#include "ops/op_utils.h"

namespace tv::ltorch {

using namespace tv::ops;

namespace {

using Args = const std::vector<Value>&;
using Kw = const Kwargs&;

int64_t rank(const T& a) { return static_cast<int64_t>(a->shape.size()); }

Value reshape_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  Shape shape = ints_arg(args, 1, "shape");
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred >= 0) throw OpError("only one dimension can be -1 in " + shape_text(shape));
      inferred = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      throw OpError("invalid size " + std::to_string(shape[i]) + " in " + shape_text(shape));
    } else {
      known *= shape[i];
    }
  }
  if (inferred >= 0) {
    if (known == 0 || a->numel() % known != 0)
      throw OpError("cannot reshape a tensor of shape " + shape_text(a->shape) + " to " + shape_text(shape));
    shape[inferred] = a->numel() / known;
  }
  return Value::of(call1(b, "prims.reshape", {Value::of(a), Value::ints(shape)}));
}

Value view_impl(TraceBuilder& b, Args args, Kw) {
  return Value::of(reshape(b, tensor_arg(args, 0, "a"), ints_arg(args, 1, "shape")));
}

Value transpose_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  int64_t d0 = meta::normalize_dim(int_arg(args, 1, "dim0"), rank(a));
  int64_t d1 = meta::normalize_dim(int_arg(args, 2, "dim1"), rank(a));
  std::vector<int64_t> perm(a->shape.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  if (!perm.empty()) std::swap(perm[d0], perm[d1]);
  return Value::of(call1(b, "prims.transpose", {Value::of(a), Value::ints(perm)}));
}

Value permute_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  Dims dims = ints_arg(args, 1, "dims");
  if (static_cast<int64_t>(dims.size()) != rank(a))
    throw OpError("permute dims " + shape_text(dims) + " do not match a tensor of shape " + shape_text(a->shape));
  return Value::of(call1(b, "prims.transpose", {Value::of(a), Value::ints(meta::normalize_dims(dims, rank(a)))}));
}

Value unsqueeze_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  int64_t dim = meta::normalize_dim(int_arg(args, 1, "dim"), rank(a) + 1);
  Shape shape = a->shape;
  shape.insert(shape.begin() + dim, 1);
  Dims kept;
  for (int64_t i = 0; i < rank(a) + 1; ++i)
    if (i != dim) kept.push_back(i);
  return Value::of(call1(b, "prims.broadcast_in_dim", {Value::of(a), Value::ints(shape), Value::ints(kept)}));
}

Value expand_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  Shape shape = ints_arg(args, 1, "shape");
  int64_t offset = static_cast<int64_t>(shape.size()) - rank(a);
  if (offset < 0) throw OpError("cannot expand shape " + shape_text(a->shape) + " to fewer dims " + shape_text(shape));
  Dims dims;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    if (shape[i] == -1) {
      if (i < offset) throw OpError("-1 is not allowed for a new leading dim in " + shape_text(shape));
      shape[i] = a->shape[i - offset];
    }
    if (i >= offset) dims.push_back(i);
  }
  return Value::of(call1(b, "prims.broadcast_in_dim", {Value::of(a), Value::ints(shape), Value::ints(dims)}));
}

Value broadcast_in_dim_impl(TraceBuilder& b, Args args, Kw) {
  return Value::of(call1(b, "prims.broadcast_in_dim",
                         {Value::of(tensor_arg(args, 0, "a")), Value::ints(ints_arg(args, 1, "shape")),
                          Value::ints(ints_arg(args, 2, "broadcast_dimensions"))}));
}

Value split_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  int64_t size = int_arg(args, 1, "split_size");
  int64_t dim = meta::normalize_dim(int_arg(args, 2, "dim"), rank(a));
  if (size <= 0) throw OpError("split_size must be positive, got " + std::to_string(size));
  std::vector<Value> pieces;
  int64_t length = a->shape.empty() ? 1 : a->shape[dim];
  for (int64_t start = 0; start < length || (length == 0 && pieces.empty()); start += size) {
    Dims begin(a->shape.size(), 0), end = a->shape;
    begin[dim] = start;
    end[dim] = std::min(start + size, length);
    pieces.push_back(
        Value::of(call1(b, "prims.slice", {Value::of(a), Value::ints(begin), Value::ints(end), Value::none()})));
  }
  return Value::tuple(std::move(pieces));
}

Value cat_impl(TraceBuilder& b, Args args, Kw) {
  const Value& list = arg(args, 0, "tensors");
  return Value::of(call1(b, "prims.cat", {Value::list(list.items), Value::integer(int_arg(args, 1, "dim"))}));
}

Value stack_impl(TraceBuilder& b, Args args, Kw) {
  const Value& list = arg(args, 0, "tensors");
  if (!list.is_sequence() || list.items.empty()) throw OpError("stack expects a non-empty list of tensors");
  std::vector<T> tensors;
  for (size_t i = 0; i < list.items.size(); ++i) {
    if (!list.items[i].is_proxy() || !list.items[i].proxy->is_tensor())
      throw OpError("stack expects tensors; item " + std::to_string(i) + " is not one");
    tensors.push_back(list.items[i].proxy);
    if (tensors.back()->shape != tensors.front()->shape)
      throw OpError("stack expects tensors of one shape; item " + std::to_string(i) + " is " +
                    shape_text(tensors.back()->shape) + ", item 0 " + shape_text(tensors.front()->shape));
  }
  int64_t dim = meta::normalize_dim(int_arg(args, 1, "dim"), rank(tensors.front()) + 1);
  std::vector<Value> lifted;
  for (const auto& t : tensors) lifted.push_back(V(unsqueeze(b, t, dim)));
  return Value::of(call1(b, "prims.cat", {Value::list(std::move(lifted)), Value::integer(dim)}));
}

Value unbind_impl(TraceBuilder& b, Args args, Kw) {
  T a = tensor_arg(args, 0, "a");
  if (a->shape.empty()) throw OpError("unbind expects a tensor of at least one dimension, got a 0-d one");
  int64_t dim = meta::normalize_dim(int_arg(args, 1, "dim"), rank(a));
  Shape piece_shape = a->shape;
  piece_shape.erase(piece_shape.begin() + dim);
  std::vector<Value> pieces;
  for (int64_t k = 0; k < a->shape[dim]; ++k) {
    Dims begin(a->shape.size(), 0), end = a->shape;
    begin[dim] = k;
    end[dim] = k + 1;
    T slice = call1(b, "prims.slice", {Value::of(a), Value::ints(begin), Value::ints(end), Value::none()});
    pieces.push_back(Value::of(call1(b, "prims.reshape", {Value::of(slice), Value::ints(piece_shape)})));
  }
  return Value::tuple(std::move(pieces));
}

std::vector<Value> values_of(const std::vector<T>& ts) {
  std::vector<Value> out;
  for (const auto& t : ts) out.push_back(V(t));
  return out;
}

}  // namespace

T reshape(TraceBuilder& b, const T& a, const Dims& shape) {
  return call1(b, "ltorch.reshape", {V(a), Value::ints(shape)});
}
T view(TraceBuilder& b, const T& a, const Dims& shape) { return call1(b, "ltorch.view", {V(a), Value::ints(shape)}); }
T transpose(TraceBuilder& b, const T& a, int64_t dim0, int64_t dim1) {
  return call1(b, "ltorch.transpose", {V(a), Value::integer(dim0), Value::integer(dim1)});
}
T permute(TraceBuilder& b, const T& a, const Dims& dims) {
  return call1(b, "ltorch.permute", {V(a), Value::ints(dims)});
}
T unsqueeze(TraceBuilder& b, const T& a, int64_t dim) {
  return call1(b, "ltorch.unsqueeze", {V(a), Value::integer(dim)});
}
T expand(TraceBuilder& b, const T& a, const Dims& shape) {
  return call1(b, "ltorch.expand", {V(a), Value::ints(shape)});
}
T broadcast_in_dim(TraceBuilder& b, const T& a, const Dims& shape, const Dims& broadcast_dimensions) {
  return call1(b, "ltorch.broadcast_in_dim", {V(a), Value::ints(shape), Value::ints(broadcast_dimensions)});
}
std::vector<T> split(TraceBuilder& b, const T& a, int64_t split_size, int64_t dim) {
  Value out = b.call("ltorch.split", {V(a), Value::integer(split_size), Value::integer(dim)});
  std::vector<T> pieces;
  for_each_proxy(out, [&](const ProxyPtr& p) { pieces.push_back(p); });
  return pieces;
}
T cat(TraceBuilder& b, const std::vector<T>& tensors, int64_t dim) {
  return call1(b, "ltorch.cat", {Value::list(values_of(tensors)), Value::integer(dim)});
}
T stack(TraceBuilder& b, const std::vector<T>& tensors, int64_t dim) {
  return call1(b, "ltorch.stack", {Value::list(values_of(tensors)), Value::integer(dim)});
}
std::vector<T> unbind(TraceBuilder& b, const T& a, int64_t dim) {
  Value out = b.call("ltorch.unbind", {V(a), Value::integer(dim)});
  std::vector<T> pieces;
  for_each_proxy(out, [&](const ProxyPtr& p) { pieces.push_back(p); });
  return pieces;
}

}  // namespace tv::ltorch

namespace tv::ops {

void register_shape() {
  using namespace tv::ltorch;
  const std::vector<std::string> shape = {"shape"};
  define("ltorch.reshape", false, shape, reshape_impl);
  define("ltorch.view", false, shape, view_impl);
  define("ltorch.transpose", false, shape, transpose_impl);
  define("ltorch.permute", false, shape, permute_impl);
  define("ltorch.unsqueeze", false, shape, unsqueeze_impl);
  define("ltorch.expand", false, shape, expand_impl);
  define("ltorch.broadcast_in_dim", false, shape, broadcast_in_dim_impl);
  define("ltorch.split", false, shape, split_impl);
  define("ltorch.cat", false, shape, cat_impl);
  define("ltorch.stack", false, shape, stack_impl);
  define("ltorch.unbind", false, shape, unbind_impl);
}

}  // namespace tv::ops
