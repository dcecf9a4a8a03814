#include "ir/trace.h"

namespace tv {

std::vector<ProxyPtr> BoundSymbol::inputs() const {
  std::vector<ProxyPtr> out;
  auto add = [&](const ProxyPtr& p) { out.push_back(p); };
  for (const auto& a : args) for_each_proxy(a, add);
  for (const auto& [k, v] : kwargs) for_each_proxy(v, add);
  return out;
}

Value Trace::returned() const {
  for (auto it = body.rbegin(); it != body.rend(); ++it)
    if (it->symbol->form == PrintForm::ret) return it->args.empty() ? Value::none() : it->args[0];
  return Value::none();
}

std::shared_ptr<Trace> derive(const Trace& t, std::string pass_name) {
  auto out = std::make_shared<Trace>(t);
  out->provenance = Provenance{std::move(pass_name), std::nullopt};
  return out;
}

void walk(const std::vector<BoundSymbol>& body,
          const std::function<void(const BoundSymbol&, int depth)>& fn, int depth) {
  for (const auto& b : body) {
    fn(b, depth);
    walk(b.subsymbols, fn, depth + 1);
  }
}

}  // namespace tv
