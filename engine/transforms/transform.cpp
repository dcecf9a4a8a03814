#include "transforms/transform.h"

#include <map>
#include <mutex>
#include <stdexcept>

#include "transforms/autocast.h"
#include "transforms/collectives.h"
#include "transforms/ddp.h"
#include "transforms/fsdp.h"
#include "transforms/remat.h"

namespace tv {
namespace {

std::mutex& factories_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, TransformFactory>& factories() {
  static std::map<std::string, TransformFactory> f;
  return f;
}

// The built-in transforms and the symbols they record, registered once on first use (not by
// static initialisers, which the linker drops from a static library).
void register_builtins() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_transform("remat", [] { return make_remat_transform(); });
    register_transform("ddp", [] { return make_ddp_transform(); });
    register_transform("fsdp", [] { return make_fsdp_transform(); });
    register_transform("autocast", [] { return make_autocast_transform(); });
    collectives::register_collective_symbols();
  });
}

}  // namespace

void register_transform(const std::string& name, TransformFactory factory) {
  std::lock_guard lock(factories_mutex());
  factories()[name] = factory;
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
    auto it = factories().find(name);
    if (it != factories().end()) factory = it->second;
  }
  if (!factory) {
    std::string known;
    for (const auto& n : transform_names()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown transform '" + name + "' (known: " + known + ")");
  }
  return factory();
}

}  // namespace tv
