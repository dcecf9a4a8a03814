#include "transforms/transform.h"

#include <map>
#include <mutex>
#include <stdexcept>

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

}  // namespace

void register_transform(const std::string& name, TransformFactory factory) {
  std::lock_guard lock(factories_mutex());
  factories()[name] = factory;
}

std::vector<std::string> transform_names() {
  std::lock_guard lock(factories_mutex());
  std::vector<std::string> out{"jit"};
  for (const auto& [name, f] : factories()) out.push_back(name);
  return out;
}

std::unique_ptr<Transform> make_transform(const std::string& name) {
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
