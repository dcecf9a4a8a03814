#include "transforms/autocast.h"

#include <chrono>

#include "ops/ltorch.h"
#include "ops/collectives.h"

namespace tv {
namespace {

bool matmul_like(const BoundSymbol& b) {
  const std::string& n = b.name();
  return n == "ltorch.linear" || n == "ltorch.matmul" || n == "ltorch.scaled_dot_product_attention";
}

// Renames the outputs `from` -> `to` in `b` and its subsymbols.
void rename_output(BoundSymbol& b, const std::string& from, const ProxyPtr& to) {
  for (auto& o : b.outputs)
    if (o->name == from) o = to;
  for (auto& s : b.subsymbols) rename_output(s, from, to);
}

class Autocast : public Transform {
 public:
  std::string name() const override { return "autocast"; }
  std::optional<DType> computes_in(const TransformContext& c) const override { return c.autocast_dtype; }
  void pre_prologue(StageHistory& h, const TransformContext& c) const override {
    auto computation = h.last(TraceKind::forward);
    if (!computation) return;
    auto start = std::chrono::steady_clock::now();
    std::string pass = std::string("autocast (") + std::string(short_name(c.autocast_dtype)) + ")";
    auto out = autocast_computation(*computation, c.autocast_dtype, pass);
    h.record(TraceKind::forward, pass, out,
             std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
};

}  // namespace

std::unique_ptr<Transform> make_autocast_transform() { return std::make_unique<Autocast>(); }

TracePtr autocast_computation(const Trace& computation, DType dtype, const std::string& pass) {
  ltorch::register_ops();
  auto out = derive_without_body(computation, pass);
  TraceBuilder b(computation.function_name);
  collectives::reserve_names(b, computation);
  for (const auto& s : computation.body) {
    if (!matmul_like(s) || s.outputs.size() != 1 || s.output()->dtype != DType::f32) {
      out->body.push_back(s);
      continue;
    }
    size_t mark = b.trace().body.size();
    std::vector<Value> args;
    for (const auto& a : s.args) {
      if (a.is_proxy() && a.proxy->kind == ProxyKind::tensor && a.proxy->dtype == DType::f32)
        args.push_back(Value::of(ltorch::convert_element_type(b, a.proxy, dtype)));
      else
        args.push_back(a);
    }
    Value low = b.call(*s.symbol, args, s.kwargs);
    ProxyPtr back = ltorch::convert_element_type(b, low.proxy, DType::f32);
    auto& body = b.trace().body;
    rename_output(body.back(), back->name, s.output());
    if (mark < body.size()) body[mark].header = s.header;
    for (size_t i = mark; i < body.size(); ++i) body[i].source = s.source;
    for (size_t i = mark; i < body.size(); ++i) out->body.push_back(body[i]);
  }
  return out;
}

}  // namespace tv
