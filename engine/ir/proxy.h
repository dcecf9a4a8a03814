// Proxies: the named values a trace computes with.
// Contract: a Proxy is immutable once made and shared by pointer; two traces may share proxies.
// Its type text is what Thunder prints inside quotes (`"cuda:0 f32[2, 5]"`, `"int 5"`,
// `"Collection"`); `type_text` and `parse_type_text` are inverse for every kind.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/dtype.h"

namespace tv {

enum class ProxyKind { tensor, future_tensor, number, collection, any, string, other };
enum class NumberType { boolean, integer, floating };
// How a parameter tensor is laid out over ranks (set by ddp and fsdp).
enum class Distribution { none, replicated, fully_sharded };

struct Proxy {
  std::string name;
  ProxyKind kind = ProxyKind::any;

  // tensor and future_tensor
  std::vector<int64_t> shape;
  DType dtype = DType::f32;
  Device device;
  bool requires_grad = false;
  Distribution distribution = Distribution::none;

  // number: the value when it is known at trace time (Thunder prints it: "int 5")
  NumberType number_type = NumberType::integer;
  std::optional<double> number_value;

  // other: the type text as printed, e.g. "<class 'torch.dtype'>"
  std::string other_text;

  bool is_tensor() const { return kind == ProxyKind::tensor || kind == ProxyKind::future_tensor; }
  int64_t numel() const;
};

using ProxyPtr = std::shared_ptr<const Proxy>;

ProxyPtr make_tensor(std::string name, std::vector<int64_t> shape, DType dtype, Device device,
                     bool requires_grad = false, Distribution distribution = Distribution::none);
ProxyPtr make_proxy(std::string name, ProxyKind kind);
ProxyPtr make_number(std::string name, NumberType type, std::optional<double> value);
ProxyPtr renamed(const Proxy& p, std::string name);

std::string type_text(const Proxy&);
void append_type_text(std::string& out, const Proxy&);  // type_text appended to `out`
std::string shape_text(const std::vector<int64_t>& shape);  // "[2, 5]"
void append_shape_text(std::string& out, const std::vector<int64_t>& shape);
std::string_view distribution_name(Distribution);

// Parses a type text into a proxy named `name`. Returns nullopt and sets `error` on bad text.
std::optional<Proxy> parse_type_text(std::string_view text, std::string name, std::string* error);

}  // namespace tv
