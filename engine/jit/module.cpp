#include "jit/module.h"

#include <ATen/ATen.h>

#include <fstream>
#include <mutex>
#include <stdexcept>

#include "aten/convert.h"
#include "ir/python_literal.h"

#ifndef TV_SOURCE_ROOT
#define TV_SOURCE_ROOT ""
#endif

namespace tv::jit {
namespace {

DType dtype_of(at::ScalarType t) {
  if (auto d = aten::dtype_of(t)) return *d;
  throw std::invalid_argument(std::string("unsupported tensor dtype ") + at::toString(t));
}

template <class Map>
std::string names_of(const Map& m) {
  std::string out;
  for (const auto& [k, v] : m) out += (out.empty() ? "" : ", ") + k;
  return out;
}

// The lines of a source file, read once per process.
const std::vector<std::string>* source_lines(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<std::vector<std::string>>> files;
  std::lock_guard lock(mutex);
  auto& slot = files[path];
  if (!slot) {
    slot = std::make_unique<std::vector<std::string>>();
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) slot->push_back(line);
  }
  return slot.get();
}

}  // namespace

TensorMeta TensorMeta::of(const at::Tensor& t) {
  TensorMeta m;
  m.shape = t.sizes().vec();
  m.dtype = dtype_of(t.scalar_type());
  m.device = aten::from_device(t.device());
  m.requires_grad = t.requires_grad();
  return m;
}

std::string TensorMeta::str() const {
  return device.str() + " " + std::string(short_name(dtype)) + shape_text(shape) + (requires_grad ? " requires_grad" : "");
}

std::string attr_text(const AttrValue& v) {
  if (auto b = std::get_if<bool>(&v)) return *b ? "True" : "False";
  if (auto i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto f = std::get_if<double>(&v)) return python_float_repr(*f);
  return python_string_repr(std::get<std::string>(v));
}

TensorMeta NamedTensor::meta() const { return TensorMeta::of(*value); }

void Module::add_parameter(std::string n, at::Tensor v) {
  parameters.push_back({std::move(n), std::make_shared<at::Tensor>(std::move(v))});
}
void Module::add_buffer(std::string n, at::Tensor v) {
  buffers.push_back({std::move(n), std::make_shared<at::Tensor>(std::move(v))});
}
void Module::add_input(std::string n, at::Tensor v) {
  inputs.push_back({std::move(n), std::make_shared<at::Tensor>(std::move(v))});
}

void Module::set_attribute(const std::string& n, AttrValue v) {
  for (auto& [k, old] : attributes)
    if (k == n) {
      old = std::move(v);
      return;
    }
  attributes.emplace_back(n, std::move(v));
}

const NamedTensor* Module::find_parameter(std::string_view n) const {
  for (const auto* list : {&parameters, &buffers})
    for (const auto& p : *list)
      if (p.name == n) return &p;
  return nullptr;
}

const AttrValue* Module::find_attribute(std::string_view n) const {
  for (const auto& [k, v] : attributes)
    if (k == n) return &v;
  return nullptr;
}

std::vector<TensorMeta> Module::input_metadata() const {
  std::vector<TensorMeta> out;
  for (const auto& i : inputs) out.push_back(i.meta());
  return out;
}

std::string parameter_proxy_name(std::string_view qualified_name) {
  std::string out = "t_";
  for (char c : qualified_name) out += c == '.' ? '_' : c;
  return out;
}

std::string source_header(const std::source_location& loc) {
  std::string path = loc.file_name();
  std::string shown = path;
  for (const char* root : {"/engine/", "/tests/", "/samples/", "/bindings/", "/app/"}) {
    auto at = path.rfind(root);
    if (at != std::string::npos) {
      shown = path.substr(at + 1);
      break;
    }
  }
  std::string out = shown + ":" + std::to_string(loc.line());
  const auto* lines = source_lines(path);
  // A compiler cache may record the file relative to the build folder; the source tree has it.
  if (lines->empty() && *TV_SOURCE_ROOT) lines = source_lines(std::string(TV_SOURCE_ROOT) + "/" + shown);
  if (loc.line() >= 1 && loc.line() <= lines->size()) {
    const auto& text = (*lines)[loc.line() - 1];
    if (text.find_first_not_of(" \t") != std::string::npos) out += ": \t" + text;
  }
  return out;
}

ForwardContext::ForwardContext(TraceBuilder& builder, const Module& module,
                               std::map<std::string, ProxyPtr, std::less<>> inputs,
                               std::map<std::string, ProxyPtr, std::less<>> tensors)
    : builder_(builder), module_(module), inputs_(std::move(inputs)), tensors_(std::move(tensors)) {}

TraceBuilder& ForwardContext::here(std::source_location loc) {
  builder_.set_location(source_header(loc));
  return builder_;
}

ProxyPtr ForwardContext::input(std::string_view n) const {
  auto it = inputs_.find(n);
  if (it == inputs_.end())
    throw std::invalid_argument("model '" + module_.name + "' has no input '" + std::string(n) +
                                "'; inputs: " + names_of(inputs_));
  return it->second;
}

ProxyPtr ForwardContext::param(std::string_view n) const {
  auto it = tensors_.find(n);
  if (it == tensors_.end())
    throw std::invalid_argument("model '" + module_.name + "' has no parameter or buffer '" + std::string(n) +
                                "'; it has: " + names_of(tensors_));
  return it->second;
}

const AttrValue& ForwardContext::attr(std::string_view n) const {
  if (auto v = module_.find_attribute(n)) return *v;
  throw std::invalid_argument("model '" + module_.name + "' has no attribute '" + std::string(n) + "'");
}

int64_t ForwardContext::attr_int(std::string_view n) const {
  const auto& v = attr(n);
  if (auto i = std::get_if<int64_t>(&v)) return *i;
  throw std::invalid_argument("attribute '" + std::string(n) + "' is not an int: " + attr_text(v));
}

}  // namespace tv::jit
