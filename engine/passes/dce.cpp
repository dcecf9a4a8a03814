#include "passes/dce.h"

#include "passes/pass_util.h"

namespace tv::passes {
namespace {

bool never_collected(const BoundSymbol& b) {
  if (b.symbol->form == PrintForm::unpack_trivial || b.symbol->form == PrintForm::ret) return true;
  if (b.outputs.empty()) return true;  // del, checks, clears: statements kept for their effect
  return has_trait(b, Trait::check) || has_trait(b, Trait::collective) || has_trait(b, Trait::effect);
}

}  // namespace

TracePtr dead_code_elimination(const Trace& t) {
  PassTimer timer;
  NameSet needed = returned_names(t);
  std::vector<bool> keep(t.body.size(), false);
  for (size_t i = t.body.size(); i-- > 0;) {
    const BoundSymbol& b = t.body[i];
    if (is_del(b)) continue;  // decided below, once the kept values are known
    bool k = never_collected(b);
    for (const auto& o : b.outputs) k = k || needed.contains(o->name);
    if (!k) continue;
    keep[i] = true;
    for (const auto& p : b.inputs()) needed.insert(p->name);
  }

  NameSet defined;
  for (const auto& p : t.params) defined.insert(p.proxy->name);
  auto out = derive_without_body(t, "Dead Code Elimination");
  for (size_t i = 0; i < t.body.size(); ++i) {
    const BoundSymbol& b = t.body[i];
    if (is_del(b)) {
      BoundSymbol d = b;
      d.args.clear();
      for (const auto& a : b.args)
        if (!a.is_proxy() || defined.contains(a.proxy->name)) d.args.push_back(a);
      if (!d.args.empty()) out->body.push_back(std::move(d));
      continue;
    }
    if (!keep[i]) continue;
    for (const auto& o : b.outputs) defined.insert(o->name);
    out->body.push_back(b);
  }
  return timer.finish(out, "Dead Code Elimination");
}

}  // namespace tv::passes
