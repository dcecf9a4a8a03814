#include "runtime/value.h"

#include <ATen/ATen.h>

#include "ir/proxy.h"
#include "ir/python_literal.h"
#include "runtime/aten_util.h"

namespace tv::exec {

DType from_scalar_type(at::ScalarType s) {
  if (auto d = aten::dtype_of(s)) return *d;
  throw ExecError(std::string("unsupported tensor dtype ") + c10::toString(s));
}

std::string shape_str(at::IntArrayRef shape) {
  std::string s = "(";
  for (size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

std::string tensor_text(const at::Tensor& t) {
  if (!t.defined()) return "undefined tensor";
  std::string dt;
  try {
    dt = std::string(short_name(from_scalar_type(t.scalar_type())));
  } catch (const ExecError&) {
    dt = c10::toString(t.scalar_type());
  }
  std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
  return from_device(t.device()).str() + " " + dt + shape_text(shape);
}

namespace {
std::string kind_name(RValue::Kind k) {
  switch (k) {
    case RValue::Kind::none: return "None";
    case RValue::Kind::boolean: return "bool";
    case RValue::Kind::integer: return "int";
    case RValue::Kind::floating: return "float";
    case RValue::Kind::string: return "str";
    case RValue::Kind::dtype: return "dtype";
    case RValue::Kind::device: return "device";
    case RValue::Kind::tensor: return "tensor";
    case RValue::Kind::tuple: return "tuple";
    case RValue::Kind::list: return "list";
    case RValue::Kind::dict: return "dict";
    case RValue::Kind::module: return "module";
    case RValue::Kind::name: return "object";
  }
  return "?";
}
}  // namespace

const at::Tensor& RValue::tensor() const {
  if (kind != Kind::tensor) throw ExecError("expected a tensor, got " + describe(*this));
  return t;
}

double RValue::number() const {
  switch (kind) {
    case Kind::boolean: return b ? 1.0 : 0.0;
    case Kind::integer: return static_cast<double>(i);
    case Kind::floating: return f;
    default: throw ExecError("expected a number, got " + describe(*this));
  }
}

int64_t RValue::integer_value() const {
  if (kind == Kind::integer) return i;
  if (kind == Kind::boolean) return b ? 1 : 0;
  throw ExecError("expected an int, got " + describe(*this));
}

std::vector<int64_t> RValue::ints() const {
  if (kind == Kind::integer || kind == Kind::boolean) return {integer_value()};
  if (!is_sequence()) throw ExecError("expected a sequence of ints, got " + describe(*this));
  std::vector<int64_t> out;
  for (const auto& v : items) out.push_back(v.integer_value());
  return out;
}

const RValue& RValue::operator[](size_t k) const {
  if (!is_sequence()) throw ExecError("expected a tuple or list, got " + describe(*this));
  if (k >= items.size())
    throw ExecError("index " + std::to_string(k) + " out of range for " + describe(*this));
  return items[k];
}

const RValue* RValue::find(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k.kind == Kind::string && k.s == key) return &v;
  return nullptr;
}

std::string python_text(const RValue& v) {
  switch (v.kind) {
    case RValue::Kind::none: return "None";
    case RValue::Kind::boolean: return v.b ? "True" : "False";
    case RValue::Kind::integer: return std::to_string(v.i);
    case RValue::Kind::floating: return python_float_repr(v.f);
    case RValue::Kind::string: return python_string_repr(v.s);
    case RValue::Kind::dtype: return std::string(torch_name(v.dtype));
    case RValue::Kind::device: return "torch.device(\"" + v.device.str() + "\")";
    case RValue::Kind::name: return v.s;
    default: return describe(v);
  }
}

std::string describe(const RValue& v) {
  switch (v.kind) {
    case RValue::Kind::tensor: return "tensor " + tensor_text(v.t);
    case RValue::Kind::tuple:
    case RValue::Kind::list: return kind_name(v.kind) + " of " + std::to_string(v.items.size());
    case RValue::Kind::dict: return "dict of " + std::to_string(v.entries.size());
    case RValue::Kind::module: return v.s.empty() ? "module" : "module '" + v.s + "'";
    case RValue::Kind::none: return "None";
    default: return kind_name(v.kind) + " " + python_text(v);
  }
}

std::vector<at::Tensor> tensors_of(const RValue& v) {
  std::vector<at::Tensor> out;
  std::function<void(const RValue&)> go = [&](const RValue& x) {
    if (x.kind == RValue::Kind::tensor) out.push_back(x.t);
    for (const auto& i : x.items) go(i);
    for (const auto& [k, e] : x.entries) go(e);
  };
  go(v);
  return out;
}

}  // namespace tv::exec
