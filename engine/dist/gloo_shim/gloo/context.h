// Stand-in for gloo/context.h (see README.txt): declarations only, never defined or called here.
#pragma once
#define TV_GLOO_SHIM 1
#include <chrono>

namespace gloo {
class Context {
 public:
  void setTimeout(std::chrono::milliseconds timeout);
};
}  // namespace gloo
