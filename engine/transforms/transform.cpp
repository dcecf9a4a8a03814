#include "transforms/transform.h"

#include <ATen/ATen.h>

#include <mutex>
#include <stdexcept>

#include "transforms/autocast.h"
#include "jit/module.h"
#include "ops/collectives.h"
#include "transforms/ddp.h"
#include "transforms/fsdp.h"
#include "transforms/hsdp.h"
#include "transforms/remat.h"

namespace tv {
namespace {

std::mutex& factories_mutex() {
  static std::mutex m;
  return m;
}
// In registration order, which is the order transform_names() lists them in.
std::vector<std::pair<std::string, TransformFactory>>& factories() {
  static std::vector<std::pair<std::string, TransformFactory>> f;
  return f;
}

TransformFactory find_factory(const std::string& name) {
  for (const auto& [n, f] : factories())
    if (n == name) return f;
  return nullptr;
}

// The built-in transforms and the symbols they record, registered once on first use (not by
// static initialisers, which the linker drops from a static library).
void register_builtins() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_transform("ddp", [] { return make_ddp_transform(); });
    register_transform("fsdp", [] { return make_fsdp_transform(); });
    register_transform("hsdp", [] { return make_hsdp_transform(); });
    register_transform("autocast", [] { return make_autocast_transform(); });
    register_transform("remat", [] { return make_remat_transform(); });
    collectives::register_collective_symbols();
  });
}

}  // namespace

const SemanticsMode& TransformContext::mode() const { return semantics ? *semantics : semantics_modes().front(); }

bool TransformContext::finds_process_group(StateConsumer consumer) const {
  return tv::finds_process_group(mode(), consumer, at_jit, at_call);
}

bool Transform::distributes_parameters() const {
  for (const auto& c : claims())
    if (c == kParameterDistribution) return true;
  return false;
}

at::Tensor Transform::local_gradient(const at::Tensor& mean, const TransformContext&) const { return mean; }

void broadcast_module(jit::Module& m, const std::function<void(at::Tensor&)>& broadcast) {
  for (auto* list : {&m.parameters, &m.buffers})
    for (auto& p : *list) {
      at::Tensor t = p.value->detach();  // shares storage; in place on a leaf that requires grad
      broadcast(t);
    }
}

void register_transform(const std::string& name, TransformFactory factory) {
  std::lock_guard lock(factories_mutex());
  for (auto& [n, f] : factories())
    if (n == name) {
      f = factory;
      return;
    }
  factories().emplace_back(name, factory);
}

std::vector<std::string> transform_names() {
  register_builtins();
  std::lock_guard lock(factories_mutex());
  std::vector<std::string> out{"jit"};
  for (const auto& [name, f] : factories()) out.push_back(name);
  return out;
}

std::unique_ptr<Transform> make_transform(const std::string& name) {
  register_builtins();
  TransformFactory factory = nullptr;
  {
    std::lock_guard lock(factories_mutex());
    factory = find_factory(name);
  }
  if (!factory) {
    std::string known;
    for (const auto& n : transform_names()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown transform '" + name + "' (known: " + known + ")");
  }
  return factory();
}

}  // namespace tv
