// The jit's Module seen by the executor: what a prologue unpacks parameters and attributes from.
// Contract: a view, not a copy; the Module must outlive it. Parameters and buffers by qualified
// name ("fc1.weight"), attributes by qualified name ("training", "fc1.in_features").
#pragma once
#include "jit/module.h"
#include "runtime/value.h"

namespace tv {

class JitModuleView : public exec::ModuleView {
 public:
  explicit JitModuleView(const jit::Module& m) : m_(m) {}
  std::optional<at::Tensor> parameter(const std::string& name) const override {
    auto* p = m_.find_parameter(name);
    if (!p) return std::nullopt;
    return *p->value;
  }
  std::optional<Attr> attribute(const std::string& name) const override {
    auto* a = m_.find_attribute(name);
    if (!a) return std::nullopt;
    return *a;
  }

 private:
  const jit::Module& m_;
};

}  // namespace tv
