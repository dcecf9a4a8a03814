// Small helpers shared by the op families (internal to engine/ops).
// Contract: argument readers throw OpError naming the argument when a value has the wrong kind;
// `define` registers a symbol once (SymbolRegistry::add upgrades an opaque placeholder the
// parser may have made).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "ir/builder.h"

namespace tv::ops {

using T = ProxyPtr;
using Shape = std::vector<int64_t>;

// Registers `name` (PrintForm::call) with its impl and traits.
void define(std::string name, bool is_prim, std::vector<std::string> traits, SymbolImpl impl);

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

// Value builders.
inline Value V(const T& t) { return t ? Value::of(t) : Value::none(); }
// A Python number of the kind `dtype` computes in: 2 -> 2.0 for float tensors.
Value number_like(double v, DType dtype);
// `v` converted to the kind of `dtype` when v is a number of a lower kind; tensors pass through.
Value convert_number(const Value& v, DType dtype);

// Floating output of floating inputs that require grad.
bool output_requires_grad(const std::vector<Value>& inputs, DType out);

// Registration of each op family (called once by ltorch::register_ops).
void register_elementwise();
void register_shape();
void register_reduction();
void register_nn();
void register_creation();

}  // namespace tv::ops
