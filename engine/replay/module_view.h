// The jit's Module seen by the executor: what a prologue unpacks parameters and attributes from.
// Contract: a view, not a copy; the Module must outlive it. Parameters and buffers by qualified
// name ("fc1.weight"), attributes by qualified name ("training", "fc1.in_features"). Safe to read
// from several threads.
#pragma once
#include <atomic>

#include "jit/module.h"
#include "runtime/value.h"

namespace tv {

class JitModuleView : public exec::ModuleView {
 public:
  explicit JitModuleView(const jit::Module& m) : m_(m) {}
  std::optional<at::Tensor> parameter(const std::string& name) const override {
    auto* p = find(name);
    if (!p) return std::nullopt;
    return *p->value;
  }
  std::optional<Attr> attribute(const std::string& name) const override {
    auto* a = m_.find_attribute(name);
    if (!a) return std::nullopt;
    return *a;
  }

 private:
  // Module::find_parameter, searching from the one after the last found: a prologue unpacks the
  // parameters in the module's order at every call, so each is found at the first comparison
  // where a search from the start would compare half of a large model's names. (A name is a
  // parameter's or a buffer's, never both, as torch's modules register them; find_parameter's
  // parameters-first order decides nothing here.)
  const jit::NamedTensor* find(const std::string& name) const {
    const size_t params = m_.parameters.size(), all = params + m_.buffers.size();
    size_t at = next_.load(std::memory_order_relaxed);
    for (size_t k = 0; k < all; ++k, ++at) {
      if (at >= all) at = 0;
      const jit::NamedTensor& t = at < params ? m_.parameters[at] : m_.buffers[at - params];
      if (t.name == name) {
        next_.store(at + 1, std::memory_order_relaxed);
        return &t;
      }
    }
    return nullptr;
  }

  const jit::Module& m_;
  mutable std::atomic<size_t> next_{0};
};

}  // namespace tv
