// Module: what the jit traces — named parameters and buffers (real tensors), attributes, example
// inputs and a forward written against the tracer.
// Contract: a Module is a plain value. The forward runs on proxies through a ForwardContext, which
// hands out the proxies of inputs (by argument name) and of parameters and buffers (by qualified
// name, "fc1.weight"), the builder, and `here()`, which stamps the caller's file:line on the next
// recorded op (the header comment above it and the location in its OpError). Attributes
// ("training", "fc1.in_features") become prologue checks and part of the cache key. This header
// does not include ATen: tensors are declared, not defined; include <ATen/ATen.h> to use them.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <source_location>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ir/builder.h"

namespace at {
class Tensor;
}

namespace tv::jit {

// The metadata of a tensor that a trace depends on.
struct TensorMeta {
  std::vector<int64_t> shape;
  DType dtype = DType::f32;
  Device device;
  bool requires_grad = false;

  static TensorMeta of(const at::Tensor&);
  std::string str() const;  // "cpu f32[2, 5]" (+ " requires_grad")
  bool operator==(const TensorMeta&) const = default;
};

// An attribute value: bool, int, float or string, as Thunder's prologue checks them.
using AttrValue = std::variant<bool, int64_t, double, std::string>;
std::string attr_text(const AttrValue&);  // Python spelling: True, 5, 25.0, 'none'

struct NamedTensor {
  std::string name;                  // "fc1.weight", or an argument name for inputs
  std::shared_ptr<at::Tensor> value;  // never null
  TensorMeta meta() const;
};

class ForwardContext;
// Returns the outputs of the forward; the computation returns them as a tuple.
using Forward = std::function<std::vector<ProxyPtr>(ForwardContext&)>;

struct Module {
  std::string name;  // "linear", "mlp", ...
  std::vector<NamedTensor> parameters;  // in named_parameters() order
  std::vector<NamedTensor> buffers;
  std::vector<NamedTensor> inputs;      // example inputs, in argument order
  std::vector<std::pair<std::string, AttrValue>> attributes;  // "training", "fc1.in_features"
  Forward forward;

  void add_parameter(std::string name, at::Tensor value);  // requires_grad as the tensor says
  void add_buffer(std::string name, at::Tensor value);
  void add_input(std::string name, at::Tensor value);
  void set_attribute(const std::string& name, AttrValue value);  // replaces or appends

  const NamedTensor* find_parameter(std::string_view name) const;  // parameters, then buffers
  const AttrValue* find_attribute(std::string_view name) const;
  std::vector<TensorMeta> input_metadata() const;
};

// The proxy name Thunder gives a parameter: "t_" + name with '.' replaced by '_'.
std::string parameter_proxy_name(std::string_view qualified_name);

// "engine/jit/zoo.cpp:42: \t  <source line>" (path trimmed to the repository, the line's text
// when the source file is readable), the format of Thunder's header comments.
std::string source_header(const std::source_location& loc);

class ForwardContext {
 public:
  ForwardContext(TraceBuilder& builder, const Module& module, std::map<std::string, ProxyPtr, std::less<>> inputs,
                 std::map<std::string, ProxyPtr, std::less<>> tensors);

  // The builder, with the caller's location set for the ops recorded next.
  TraceBuilder& here(std::source_location loc = std::source_location::current());
  TraceBuilder& builder() { return builder_; }
  const Module& module() const { return module_; }

  ProxyPtr input(std::string_view name) const;  // throws std::invalid_argument listing valid names
  ProxyPtr param(std::string_view name) const;  // parameters and buffers, by qualified name
  const AttrValue& attr(std::string_view name) const;
  int64_t attr_int(std::string_view name) const;

 private:
  TraceBuilder& builder_;
  const Module& module_;
  std::map<std::string, ProxyPtr, std::less<>> inputs_;
  std::map<std::string, ProxyPtr, std::less<>> tensors_;
};

}  // namespace tv::jit
