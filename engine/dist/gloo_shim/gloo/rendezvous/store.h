// Stand-in for gloo/rendezvous/store.h (see ../README.txt): the base ProcessGroupGloo::GlooStore
// overrides; engine/dist never constructs a GlooStore. Without GLOO_STORE_HAS_STORE_V2.
#pragma once
#define TV_GLOO_SHIM 1
#include <chrono>
#include <string>
#include <vector>

namespace gloo {
namespace rendezvous {
class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::vector<char>& data) = 0;
  virtual std::vector<char> get(const std::string& key) = 0;
  virtual void wait(const std::vector<std::string>& keys) = 0;
  virtual void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) = 0;
};
}  // namespace rendezvous
}  // namespace gloo
