// Torch-level ops for tracing: the functions models call on proxies.
// Contract: each function records one `ltorch.<name>` bound symbol through the builder, whose
// subsymbols are its decomposition into other ltorch ops and finally `prims.*` (as Thunder does);
// shapes, dtypes and devices are inferred by the prims' meta functions (broadcasting, type
// promotion, reductions with dims/keepdim, batched matmul). Bad arguments throw OpError.
// Registration of every symbol happens in register_ops(), called once (idempotent, thread-safe).
//
// Argument convention of the recorded `ltorch.*` bound symbols (the executor and autograd rely on
// it): positional args are the C++ parameters after the builder, in order, except those Thunder
// prints as keywords, which go to kwargs:
//   add/sub: alpha=1                 ltorch.add(0.5, t8, alpha=1)
//   gelu: approximate='none'         ltorch.gelu(x, approximate='none')
//   sum/mean: dtype=None             ltorch.sum(t, (0,), False, dtype=None)
//   var_mean: correction=c           ltorch.var_mean(t, (1,), True, correction=0)
// Dims are tuples of ints (`(0,)`); empty dims of sum/mean ("all") print as None, as in Thunder.
// A null tensor is None; a DType is a dtype Value (`torch.float32`); a Device is a device Value.
// Tensor lists (cat) are lists. Numbers stay Python numbers; a number is converted to the kind of
// the tensor it meets in the prims (`ltorch.true_divide(t, 2)` -> `prims.div(t, 2.0)`).
// Multi-output ops (var_mean, split) return a tuple of proxies.
// Traits: elementwise, shape, reduction, matmul, random, creation (see registry.cpp).
#pragma once
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ir/builder.h"

namespace tv::ltorch {

using T = ProxyPtr;
using Dims = std::vector<int64_t>;

void register_ops();

// Whether running the statement writes into one of its arguments: a symbol with the "effect" trait,
// except a batch or instance norm that updates no running statistic (eval mode, or none given).
bool writes_into_arguments(const BoundSymbol& s);

// Linear algebra
T linear(TraceBuilder&, const T& x, const T& weight, const T& bias /* may be null */);
T matmul(TraceBuilder&, const T& a, const T& b);

// Elementwise binary (a and b: tensor proxies or Python numbers)
T add(TraceBuilder&, const Value& a, const Value& b);
T sub(TraceBuilder&, const Value& a, const Value& b);
T mul(TraceBuilder&, const Value& a, const Value& b);
T true_divide(TraceBuilder&, const Value& a, const Value& b);
T pow(TraceBuilder&, const Value& a, const Value& b);

// Comparisons (-> b8) and maximum; a and b: tensor proxies or Python numbers
T eq(TraceBuilder&, const Value& a, const Value& b);
T ne(TraceBuilder&, const Value& a, const Value& b);
T lt(TraceBuilder&, const Value& a, const Value& b);
T le(TraceBuilder&, const Value& a, const Value& b);
T gt(TraceBuilder&, const Value& a, const Value& b);
T ge(TraceBuilder&, const Value& a, const Value& b);
T maximum(TraceBuilder&, const Value& a, const Value& b);

// Elementwise unary
T neg(TraceBuilder&, const T& a);
T exp(TraceBuilder&, const T& a);
T log(TraceBuilder&, const T& a);
T tanh(TraceBuilder&, const T& a);
T erf(TraceBuilder&, const T& a);
T rsqrt(TraceBuilder&, const T& a);
T sqrt(TraceBuilder&, const T& a);
T relu(TraceBuilder&, const T& a);
T gelu(TraceBuilder&, const T& a, const std::string& approximate = "none");  // "none" | "tanh"
T silu(TraceBuilder&, const T& a);
T sigmoid(TraceBuilder&, const T& a);

// Normalisation and losses
T layer_norm(TraceBuilder&, const T& a, const Dims& normalized_shape, const T& weight, const T& bias,
             double eps = 1e-5);
// (out, mean, rstd): layer_norm and the statistics it normalised with, shaped as `a` with the
// normalized dims kept as 1s (what the forward kernel computes; autograd's statement with residues).
std::tuple<T, T, T> native_layer_norm(TraceBuilder&, const T& a, const Dims& normalized_shape, const T& weight,
                                      const T& bias, double eps);
T softmax(TraceBuilder&, const T& a, int64_t dim);
T log_softmax(TraceBuilder&, const T& a, int64_t dim);
T cross_entropy(TraceBuilder&, const T& logits, const T& target);  // mean over the batch
T embedding(TraceBuilder&, const T& indices, const T& weight);
// grad [n, d], indices [n] (integers < num_weights) -> [num_weights, d]: row k sums the rows of grad
// whose index is k; the row `padding_idx` gets none.
T embedding_backward(TraceBuilder&, const T& grad, const T& indices, int64_t num_weights,
                     std::optional<int64_t> padding_idx = std::nullopt);
T dropout(TraceBuilder&, const T& a, double p, int64_t seed, bool training = true);
// Backward ops (recorded by the gradient rules; decomposed, and run by LibTorch's fused kernels):
// (grad_a, grad_weight, grad_bias) of layer_norm with weight and bias, from the forward's mean and
// rstd when given (else they are recomputed from a);
std::tuple<T, T, T> layer_norm_backward(TraceBuilder&, const T& grad, const T& a, const Dims& normalized_shape,
                                        const T& weight, const T& bias, double eps, const T& mean = nullptr,
                                        const T& rstd = nullptr);
// grad of softmax(a, dim) from its output; grad [N, C] of cross_entropy(logits, target) for the
// loss's cotangent `grad` [] (none for the rows whose target is `ignore_index`).
T softmax_backward(TraceBuilder&, const T& grad, const T& output, int64_t dim);
T cross_entropy_backward(TraceBuilder&, const T& grad, const T& logits, const T& target,
                         std::optional<int64_t> ignore_index = std::nullopt);
// (grad_q, grad_k, grad_v) of scaled_dot_product_attention(q, k, v, attn_mask, is_causal) for the
// cotangent `grad` of its `output`; a bool or no mask (a float mask's grad is not computed). The
// probabilities are recomputed from q and k; the output is an argument for the fused kernel, which
// takes it with the forward's log-sum-exp (`logsumexp`, scaled_dot_product_attention_forward's, when
// given; else the kernel computes it again).
std::tuple<T, T, T> scaled_dot_product_attention_backward(TraceBuilder&, const T& grad, const T& q, const T& k,
                                                          const T& v, const T& attn_mask, const T& output,
                                                          bool is_causal, const T& logsumexp = nullptr);

// Shapes
T reshape(TraceBuilder&, const T& a, const Dims& shape);  // one -1 allowed
T view(TraceBuilder&, const T& a, const Dims& shape);
T transpose(TraceBuilder&, const T& a, int64_t dim0, int64_t dim1);
T permute(TraceBuilder&, const T& a, const Dims& dims);
T unsqueeze(TraceBuilder&, const T& a, int64_t dim);
T expand(TraceBuilder&, const T& a, const Dims& shape);  // -1 keeps a dimension
T broadcast_in_dim(TraceBuilder&, const T& a, const Dims& shape, const Dims& broadcast_dimensions);
T convert_element_type(TraceBuilder&, const T& a, DType dtype);
std::vector<T> split(TraceBuilder&, const T& a, int64_t split_size, int64_t dim);
T cat(TraceBuilder&, const std::vector<T>& tensors, int64_t dim);
T stack(TraceBuilder&, const std::vector<T>& tensors, int64_t dim);  // tensors of one shape
std::vector<T> unbind(TraceBuilder&, const T& a, int64_t dim);

// Reductions (dims empty: all dimensions)
T sum(TraceBuilder&, const T& a, const Dims& dims = {}, bool keepdim = false);
T mean(TraceBuilder&, const T& a, const Dims& dims = {}, bool keepdim = false);
T amax(TraceBuilder&, const T& a, const Dims& dims, bool keepdim = false);
std::pair<T, T> var_mean(TraceBuilder&, const T& a, const Dims& dims, int64_t correction = 1, bool keepdim = false);
// Running sum along dim (primitive: an integer input sums in int64).
T cumsum(TraceBuilder&, const T& a, int64_t dim);

// Selection
T where(TraceBuilder&, const T& condition, const Value& a, const Value& b);
T masked_fill(TraceBuilder&, const T& a, const T& mask, const Value& value);

// Attention: softmax(q k^T * scale [+ mask]) v, decomposed; causal adds the lower-triangular mask.
// Whether attention on `device` runs LibTorch's fused kernels where its operands allow (CUDA with
// LibTorch 2.1 or later, the CPU with 2.3 or later): the executor then reads q, k and v as they
// are, not copied, and the forward keeps the kernel's log-sum-exp for the backward.
bool fused_attention_on(const Device& device);
T scaled_dot_product_attention(TraceBuilder&, const T& q, const T& k, const T& v, const T& attn_mask /* may be null */,
                               bool is_causal);

// Gather: out[i][j] = a[i][indices[i][j]] along dim (indices has a's rank)
T take_along_dim(TraceBuilder&, const T& a, const T& indices, int64_t dim);

// Indexing (ops/indexing.cpp), in torch's argument order: gather (index of a's rank), scatter_add
// (src of index's shape added into a copy of a), index_select and index_add (a 1-D index).
T gather(TraceBuilder&, const T& a, int64_t dim, const T& index);
T scatter_add(TraceBuilder&, const T& a, int64_t dim, const T& index, const T& src);
T index_select(TraceBuilder&, const T& a, int64_t dim, const T& index);
T index_add(TraceBuilder&, const T& a, int64_t dim, const T& index, const T& source);

// Creation
T arange(TraceBuilder&, int64_t end, Device device);  // 0 .. end-1, i64
T full(TraceBuilder&, const Dims& shape, const Value& fill, DType dtype, Device device);
T ones(TraceBuilder&, const Dims& shape, DType dtype, Device device);
T zeros(TraceBuilder&, const Dims& shape, DType dtype, Device device);

}  // namespace tv::ltorch
