// Prims: the primitive ops every ltorch op decomposes into; each has a meta function only.
// Contract: a prim's impl infers the output proxies' shape, dtype, device and requires_grad
// (floating output of an input that requires grad) and throws OpError on bad arguments. Elementwise
// prims broadcast their operands (numpy rules) and promote dtypes (meta::result_dtype); numbers are
// Python literals. Arguments are positional, in the order below; dims are tuples of ints.
//
//   unary elementwise   prims.{neg,abs,sign,exp,log,tanh,erf,rsqrt,sqrt,sin,cos,reciprocal}(a)
//                                                                        exp..reciprocal of ints give f32
//                       prims.bitwise_not(a)                             bool and integer tensors
//   binary elementwise  prims.{add,sub,mul,div,pow,maximum,minimum}(a, b)  a, b: tensor or number
//   comparisons         prims.{eq,ne,lt,le,gt,ge}(a, b)                  -> b8
//   selection           prims.where(pred, a, b)                          pred: b8 tensor
//   dtype               prims.convert_element_type(a, dtype)
//   shape               prims.reshape(a, shape)                          no -1; numel must match
//                       prims.transpose(a, permutation)                  a permutation of all dims
//                       prims.broadcast_in_dim(a, shape, broadcast_dimensions)
//                       prims.slice(a, start_indices, end_indices, strides)   strides may be None
//                       prims.cat(tensors, dim)                          tensors: a list
//                       prims.shallow_copy(a)                            identity
//                       prims.flip(a, dims)
//   effect              prims.copy_(copy_from, copy_to)                  writes into copy_to (a trace input)
//   reduction           prims.sum(a, dims)  prims.amax(a, dims)  prims.amin(a, dims)  reduced dims removed
//                       prims.var_mean(a, dims, correction=c)            -> (var, mean)
//   matmul              prims.linear(a, w, bias)  prims.matmul(a, b)     bias may be None
//   gather              prims.take(a, indices, dim)                      a.shape[:dim]+indices.shape+a.shape[dim+1:]
//                       prims.take_along_axis(a, indices, dim)           indices.shape (same rank as a)
//   creation            prims.full(shape, fill_value, device, dtype)
//                       prims.iota(length, start, step, device, dtype)   1-D [length]
//   random              prims.uniform_philox(shape, minval, maxval, device, dtype, seed, offset)
// The convolution and pooling prims are defined with their ops, in ops/spatial.cpp; gather,
// scatter_add, scatter, index_add, index_put, topk, argmax and argmin in ops/indexing.cpp.
#pragma once

namespace tv::prims {

// Registers every prim above (called by ltorch::register_ops).
void register_prims();

}  // namespace tv::prims
