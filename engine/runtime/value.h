// Runtime values: what the executor computes with, the run-time twin of ir/value.h.
// Contract: an RValue is None, a bool/int/float, a string, a dtype, a device, an at::Tensor, a
// tuple, list or dict of RValues, a module reference (a ModuleView plus a submodule prefix) or an
// opaque name (text the engine does not interpret, e.g. `thunder.devices.Device(...)`). Values are
// never mutated in place by the executor; tensors are shared (at::Tensor is a handle).
// ModuleView is what prologues unpack parameters and attributes from; the jit's Module implements
// it without the executor knowing the jit. Every failure of execution is an ExecError.
// This header includes <ATen/core/Tensor.h> (the Tensor class only), never <ATen/ATen.h>.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ir/dtype.h"

namespace tv::exec {

// An execution failure: a check that did not hold, an op that failed, a symbol with no rule.
class ExecError : public std::runtime_error {
 public:
  explicit ExecError(const std::string& message, std::string symbol = {})
      : std::runtime_error(message), symbol_(std::move(symbol)) {}
  // The name of the symbol being executed when it happened ("" when unknown).
  const std::string& symbol() const { return symbol_; }

 private:
  std::string symbol_;
};

// The module a prologue unpacks: parameters and buffers by qualified name ("fc1.weight"),
// attributes by qualified name ("training", "fc1.in_features").
class ModuleView {
 public:
  using Attr = std::variant<bool, int64_t, double, std::string>;  // same as jit::AttrValue
  virtual ~ModuleView() = default;
  // The parameter or buffer; nullopt when the module has none of that name.
  virtual std::optional<at::Tensor> parameter(const std::string& qualified_name) const = 0;
  // The attribute; nullopt when absent.
  virtual std::optional<Attr> attribute(const std::string& qualified_name) const = 0;
};

struct RValue {
  enum class Kind { none, boolean, integer, floating, string, dtype, device, tensor, tuple, list, dict, module, name };
  Kind kind = Kind::none;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;             // string contents, opaque name text, module prefix ("" = root)
  DType dtype = DType::f32;
  Device device;
  at::Tensor t;
  std::vector<RValue> items;                        // tuple, list
  std::vector<std::pair<RValue, RValue>> entries;   // dict
  const ModuleView* module = nullptr;               // module

  static RValue none() { return {}; }
  static RValue boolean(bool v) { RValue x; x.kind = Kind::boolean; x.b = v; return x; }
  static RValue integer(int64_t v) { RValue x; x.kind = Kind::integer; x.i = v; return x; }
  static RValue floating(double v) { RValue x; x.kind = Kind::floating; x.f = v; return x; }
  static RValue string(std::string v) { RValue x; x.kind = Kind::string; x.s = std::move(v); return x; }
  static RValue name(std::string v) { RValue x; x.kind = Kind::name; x.s = std::move(v); return x; }
  static RValue of(DType v) { RValue x; x.kind = Kind::dtype; x.dtype = v; return x; }
  static RValue of(Device v) { RValue x; x.kind = Kind::device; x.device = v; return x; }
  static RValue of(at::Tensor v) { RValue x; x.kind = Kind::tensor; x.t = std::move(v); return x; }
  static RValue tuple(std::vector<RValue> v) { RValue x; x.kind = Kind::tuple; x.items = std::move(v); return x; }
  static RValue list(std::vector<RValue> v) { RValue x; x.kind = Kind::list; x.items = std::move(v); return x; }
  static RValue dict(std::vector<std::pair<RValue, RValue>> v) { RValue x; x.kind = Kind::dict; x.entries = std::move(v); return x; }
  static RValue of_module(const ModuleView* m, std::string prefix = {}) {
    RValue x; x.kind = Kind::module; x.module = m; x.s = std::move(prefix); return x;
  }

  bool is_none() const { return kind == Kind::none; }
  bool is_tensor() const { return kind == Kind::tensor; }
  bool is_number() const { return kind == Kind::boolean || kind == Kind::integer || kind == Kind::floating; }
  bool is_sequence() const { return kind == Kind::tuple || kind == Kind::list; }

  // Accessors that throw ExecError naming the expected kind.
  const at::Tensor& tensor() const;
  double number() const;                 // bool, int or float
  int64_t integer_value() const;         // bool or int
  std::vector<int64_t> ints() const;     // an int or a sequence of ints
  const RValue& operator[](size_t k) const;  // tuple or list item
  // A dict entry by string key; nullptr when absent.
  const RValue* find(std::string_view key) const;
};

using RKwargs = std::vector<std::pair<std::string, RValue>>;

// Short description for messages: "tensor cpu f32[2, 5]", "int 5", "tuple of 2", "'none'".
std::string describe(const RValue&);
// Python text of numbers, strings, dtypes and devices; describe() for the rest.
std::string python_text(const RValue&);
// The tensors inside `v`, depth first.
std::vector<at::Tensor> tensors_of(const RValue& v);

}  // namespace tv::exec
