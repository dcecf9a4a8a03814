#include "passes/memory.h"

#include <unordered_map>

#include "passes/pass_util.h"
#include "passes/remat.h"

namespace tv::passes {

TraceMemory trace_memory(const Trace& t) {
  TraceMemory m;
  std::unordered_map<std::string, int64_t> live;  // name -> bytes
  int64_t total = 0;
  auto add = [&](const ProxyPtr& p) {
    int64_t bytes = tensor_bytes(*p);
    if (bytes == 0 || !live.emplace(p->name, bytes).second) return;
    total += bytes;
  };
  for (const auto& p : t.params) add(p.proxy);
  m.peak_live = total;
  for (size_t i = 0; i < t.body.size(); ++i) {
    const BoundSymbol& b = t.body[i];
    if (is_del(b)) {
      for (const auto& p : b.inputs())
        if (auto it = live.find(p->name); it != live.end()) {
          total -= it->second;
          live.erase(it);
        }
      continue;
    }
    if (has_trait(b, Trait::shape)) continue;
    for (const auto& o : b.outputs) add(o);
    if (total > m.peak_live) {
      m.peak_live = total;
      m.peak_at = static_cast<int>(i);
    }
  }
  m.saved_for_backward = saved_bytes(t);
  return m;
}

}  // namespace tv::passes
