#include "ir/trace.h"

namespace tv {

std::vector<ProxyRead> BoundSymbol::inputs() const {
  std::vector<ProxyRead> out;
  out.reserve(args.size() + kwargs.size());  // mostly one proxy per argument: one allocation
  auto add = [&](const ProxyPtr& p) { out.emplace_back(p); };
  for (const auto& a : args) for_each_proxy(a, add);
  for (const auto& [k, v] : kwargs) for_each_proxy(v, add);
  return out;
}

bool is_structural(const BoundSymbol& b) { return b.symbol->form != PrintForm::call && b.symbol->has(Trait::structural); }

std::optional<size_t> Trace::return_index() const {
  for (size_t i = body.size(); i-- > 0;)
    if (body[i].symbol->form == PrintForm::ret) return i;
  return std::nullopt;
}

Value Trace::returned() const {
  auto at = return_index();
  if (!at || body[*at].args.empty()) return Value::none();
  return body[*at].args[0];
}

std::shared_ptr<Trace> derive(const Trace& t, std::string pass_name) {
  auto out = std::make_shared<Trace>(t);
  out->provenance = Provenance{std::move(pass_name), std::nullopt};
  return out;
}

std::shared_ptr<Trace> derive_without_body(const Trace& t, std::string pass_name) {
  auto out = std::make_shared<Trace>();
  out->function_name = t.function_name;  // every field of Trace but the body
  out->imports = t.imports;
  out->decorators = t.decorators;
  out->params = t.params;
  out->tags = t.tags;
  out->provenance = Provenance{std::move(pass_name), std::nullopt};
  out->body.reserve(t.body.size());
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
