// Small helpers shared by the op families (internal to engine/ops).
// Contract: argument readers throw OpError naming the argument when a value has the wrong kind;
// `define` registers a symbol once (SymbolRegistry::add upgrades an opaque placeholder the
// parser may have made).
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/builder.h"
#include "runtime/rules.h"

namespace tv::ops {

using T = ProxyPtr;
using Shape = std::vector<int64_t>;

// Registers `name` (PrintForm::call) with its impl and traits; the symbol.
const Symbol& define(std::string name, bool is_prim, std::vector<std::string> traits, SymbolImpl impl);
// The defined op `name` (call form), for registering its other rules; std::logic_error when no
// family defined it (a misspelt name is a registration bug, not a silent rule for nothing).
const Symbol& op(std::string_view name);

// Registers the execution rule of the defined op `name`; `same_exec_rule` gives `name` the rule of
// `of` (an ltorch op that runs as its prim).
void exec_rule(std::string_view name, exec::SimpleExecRule rule);
void same_exec_rule(std::string_view name, std::string_view of);
// Registers the residual rule (runtime/rules.h) of the defined op `name`; `same_residual_rule` gives
// `name` the one `of` has.
void residual_rule(std::string_view name, exec::ResidualRule rule);
void same_residual_rule(std::string_view name, std::string_view of);

// Calls a symbol and returns its first output proxy (what single-output ops return).
T call1(TraceBuilder& b, std::string_view name, std::vector<Value> args, Kwargs kwargs = {});

// Argument readers for impls.
const Value& arg(const std::vector<Value>& args, size_t i, const char* name);
T tensor_arg(const std::vector<Value>& args, size_t i, const char* name);
T optional_tensor_arg(const std::vector<Value>& args, size_t i, const char* name);  // None -> null
std::vector<int64_t> ints_arg(const std::vector<Value>& args, size_t i, const char* name);
int64_t int_arg(const std::vector<Value>& args, size_t i, const char* name);
double number_arg(const std::vector<Value>& args, size_t i, const char* name);
bool bool_arg(const std::vector<Value>& args, size_t i, const char* name);
DType dtype_arg(const std::vector<Value>& args, size_t i, const char* name);
Device device_arg(const std::vector<Value>& args, size_t i, const char* name);
// A keyword argument, or nullptr when absent.
const Value* kwarg(const Kwargs& kwargs, std::string_view name);
// The arguments laid out by position as `names` orders them: those given by position, then each
// later one from its keyword, None where neither gives it (torch's F.conv2d(x, w, padding=1)).
std::vector<Value> by_position(const std::vector<Value>& args, const Kwargs& kwargs,
                               const std::vector<const char*>& names);
// OpError "<op> needs a floating tensor" unless a's dtype is floating.
void require_floating(const T& a, const char* op);
// A random op's seed: an int, or an integer tensor of shape [] (a trace input); OpError otherwise.
void check_seed(const Value& seed, const char* op);

// Value builders.
inline Value V(const T& t) { return t ? Value::of(t) : Value::none(); }
// A Python number of the kind `dtype` computes in: 2 -> 2.0 for float tensors.
Value number_like(double v, DType dtype);
// `v` converted to the kind of `dtype` when v is a number of a lower kind; tensors pass through.
Value convert_number(const Value& v, DType dtype);

// Helpers of the nn ops and their gradient rules (defined in nn.cpp):
// the indices of a's trailing dims that layer_norm's `normalized` names (OpError when it is empty,
// longer than a's rank or not a's trailing shape);
Shape normalized_dims(const T& a, const Shape& normalized);
// 1.0 where indices[..., j] == k, as a [..., classes] tensor of `dtype` (eq against an arange);
T one_hot(TraceBuilder& b, const T& indices, int64_t classes, DType dtype);
// layer_norm's input gradient rstd * (gx - mean(gx) - xhat * mean(gx * xhat)), with the statistics
// over `dims` given (the forward's, kept dims) or, when null, recomputed from a; gx = g * weight (g
// when weight is null), and xhat = (a - mean) * rstd.
std::pair<T, T> layer_norm_input_grad(TraceBuilder& b, const T& g, const T& a, const Shape& dims, const T& weight,
                                      const Value& eps, T mean = nullptr, T rstd = nullptr);

// Floating output of floating inputs that require grad.
bool output_requires_grad(const std::vector<Value>& inputs, DType out);

// Registration of each op family (called once by ltorch::register_ops).
void register_elementwise();
void register_shape();
void register_reduction();
void register_linalg();
void register_nn();
void register_creation();
void register_spatial();
void register_recurrent();
void register_indexing();
void register_interpolate();

}  // namespace tv::ops
