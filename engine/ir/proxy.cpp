#include "ir/proxy.h"

#include <charconv>
#include <cmath>

#include "ir/python_literal.h"

namespace tv {

int64_t Proxy::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

ProxyPtr make_tensor(std::string name, std::vector<int64_t> shape, DType dtype, Device device,
                     bool requires_grad, Distribution distribution) {
  auto p = std::make_shared<Proxy>();
  p->name = std::move(name);
  p->kind = ProxyKind::tensor;
  p->shape = std::move(shape);
  p->dtype = dtype;
  p->device = device;
  p->requires_grad = requires_grad;
  p->distribution = distribution;
  return p;
}

ProxyPtr make_proxy(std::string name, ProxyKind kind) {
  auto p = std::make_shared<Proxy>();
  p->name = std::move(name);
  p->kind = kind;
  return p;
}

ProxyPtr make_number(std::string name, NumberType type, std::optional<double> value) {
  auto p = std::make_shared<Proxy>();
  p->name = std::move(name);
  p->kind = ProxyKind::number;
  p->number_type = type;
  p->number_value = value;
  return p;
}

ProxyPtr renamed(const Proxy& p, std::string name) {
  auto q = std::make_shared<Proxy>(p);
  q->name = std::move(name);
  return q;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  append_shape_text(s, shape);
  return s;
}

void append_shape_text(std::string& out, const std::vector<int64_t>& shape) {
  out += '[';
  char digits[24];
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out.append(digits, std::to_chars(digits, digits + sizeof digits, shape[i]).ptr);
  }
  out += ']';
}

std::string_view distribution_name(Distribution d) {
  switch (d) {
    case Distribution::none: return "none";
    case Distribution::replicated: return "replicated";
    case Distribution::fully_sharded: return "fully_sharded";
  }
  return "none";
}

namespace {

std::string future_device_text(const Device& d) {
  return d.kind == Device::Kind::cpu
             ? std::string("thunder.devices.Device(type='cpu')")
             : "thunder.devices.Device(type='cuda', index=" + std::to_string(d.index) + ")";
}

std::string number_text(const Proxy& p) {
  std::string type = p.number_type == NumberType::boolean   ? "bool"
                     : p.number_type == NumberType::integer ? "int"
                                                            : "float";
  if (!p.number_value) return type;
  double v = *p.number_value;
  if (p.number_type == NumberType::boolean) return type + (v != 0 ? " True" : " False");
  if (p.number_type == NumberType::integer) return type + " " + std::to_string(static_cast<int64_t>(v));
  return type + " " + python_float_repr(v);
}

bool trim_prefix(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

// "f32[2, 5]" -> dtype and shape.
bool parse_dtype_shape(std::string_view s, Proxy& p, std::string* error) {
  auto open = s.find('[');
  if (open == std::string_view::npos || s.back() != ']') {
    *error = "expected a dtype and shape such as f32[2, 5], got '" + std::string(s) + "'";
    return false;
  }
  auto dtype = dtype_from_short(s.substr(0, open));
  if (!dtype) {
    *error = "unknown dtype '" + std::string(s.substr(0, open)) +
             "' (known: f64 f32 f16 bf16 i64 i32 i16 i8 ui8 b8)";
    return false;
  }
  p.dtype = *dtype;
  auto dims = s.substr(open + 1, s.size() - open - 2);
  p.shape.clear();
  while (!dims.empty()) {
    while (!dims.empty() && dims.front() == ' ') dims.remove_prefix(1);
    int64_t d = 0;
    auto [ptr, ec] = std::from_chars(dims.data(), dims.data() + dims.size(), d);
    if (ec != std::errc() || d < 0) {
      *error = "bad dimension in shape '" + std::string(s.substr(open)) + "'";
      return false;
    }
    p.shape.push_back(d);
    dims.remove_prefix(ptr - dims.data());
    if (!dims.empty() && !trim_prefix(dims, ",")) {
      *error = "expected ',' between dimensions in '" + std::string(s.substr(open)) + "'";
      return false;
    }
  }
  return true;
}

std::optional<Device> parse_future_device(std::string_view s) {
  if (s == "thunder.devices.Device(type='cpu')") return Device{};
  std::string_view prefix = "thunder.devices.Device(type='cuda', index=";
  if (!trim_prefix(s, prefix) || s.empty() || s.back() != ')') return std::nullopt;
  return Device::parse("cuda:" + std::string(s.substr(0, s.size() - 1)));
}

}  // namespace

std::string type_text(const Proxy& p) {
  std::string out;
  append_type_text(out, p);
  return out;
}

void append_type_text(std::string& out, const Proxy& p) {
  switch (p.kind) {
    case ProxyKind::tensor:
      out += p.device.str();
      out += ' ';
      out += short_name(p.dtype);
      append_shape_text(out, p.shape);
      return;
    case ProxyKind::future_tensor:
      out += "FUTURE ";
      out += future_device_text(p.device);
      out += ' ';
      out += short_name(p.dtype);
      append_shape_text(out, p.shape);
      return;
    case ProxyKind::number: out += number_text(p); return;
    case ProxyKind::collection: out += "Collection"; return;
    case ProxyKind::any: out += "Any"; return;
    case ProxyKind::string: out += "str"; return;
    case ProxyKind::other: out += p.other_text; return;
  }
  out += "Any";
}

std::optional<Proxy> parse_type_text(std::string_view s, std::string name, std::string* error) {
  Proxy p;
  p.name = std::move(name);
  if (s == "Collection") { p.kind = ProxyKind::collection; return p; }
  if (s == "Any") { p.kind = ProxyKind::any; return p; }
  if (s == "str") { p.kind = ProxyKind::string; return p; }
  for (auto [word, type] : {std::pair{"bool", NumberType::boolean}, {"int", NumberType::integer},
                            {"float", NumberType::floating}}) {
    std::string_view rest = s;
    if (!trim_prefix(rest, word)) continue;
    if (!rest.empty() && rest.front() != ' ') continue;
    p.kind = ProxyKind::number;
    p.number_type = type;
    if (rest.empty()) return p;
    rest.remove_prefix(1);
    auto v = parse_python_number(rest);
    if (!v) {
      *error = "bad number value '" + std::string(rest) + "' in type text";
      return std::nullopt;
    }
    // An int is kept as a double: only whole values it holds exactly reprint as they were read.
    bool digits = rest.find_first_not_of("-0123456789") == std::string_view::npos;
    if (type == NumberType::integer &&
        (*v != std::trunc(*v) || std::fabs(*v) > 9007199254740992.0 ||
         (digits && std::to_string(static_cast<int64_t>(*v)) != rest))) {
      *error = "int value '" + std::string(rest) + "' in type text is not a whole number within +-2**53";
      return std::nullopt;
    }
    p.number_value = *v;
    return p;
  }
  if (trim_prefix(s, "FUTURE ")) {
    p.kind = ProxyKind::future_tensor;
    auto space = s.rfind(' ', s.find('['));
    if (space == std::string_view::npos) {
      *error = "FUTURE type text needs a device and a dtype[shape]";
      return std::nullopt;
    }
    auto device = parse_future_device(s.substr(0, space));
    if (!device) {
      *error = "bad device '" + std::string(s.substr(0, space)) + "' in FUTURE type text";
      return std::nullopt;
    }
    p.device = *device;
    if (!parse_dtype_shape(s.substr(space + 1), p, error)) return std::nullopt;
    return p;
  }
  auto space = s.find(' ');
  if (space != std::string_view::npos) {
    if (auto device = Device::parse(s.substr(0, space))) {
      p.kind = ProxyKind::tensor;
      p.device = *device;
      if (!parse_dtype_shape(s.substr(space + 1), p, error)) return std::nullopt;
      return p;
    }
  }
  if (s.empty()) {
    *error = "empty type text";
    return std::nullopt;
  }
  p.kind = ProxyKind::other;
  p.other_text = std::string(s);
  return p;
}

}  // namespace tv
