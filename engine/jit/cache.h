// The jit cache: one acquisition per distinct input metadata.
// Contract: `jit(module)` returns a JitModule. `acquire_for(inputs)` builds the cache key from the
// inputs' metadata (shape, dtype, device, requires_grad), the module's parameters' and buffers'
// metadata and its attribute values; an equal key is a hit and returns the traces acquired before,
// otherwise it is a miss that acquires and stores new ones. Counters say how many of each. Changing
// the module (module()) changes later keys, so the next call misses. Thread-safe.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "jit/acquire.h"

namespace tv::jit {

struct CacheKey {
  std::vector<TensorMeta> inputs;
  std::vector<TensorMeta> tensors;  // parameters then buffers, module order
  std::vector<std::pair<std::string, AttrValue>> attributes;

  static CacheKey of(const Module&, const std::vector<TensorMeta>& inputs);
  std::string str() const;  // readable, for logs and the GUI
  bool operator==(const CacheKey&) const = default;
};

class JitModule {
 public:
  explicit JitModule(Module module);

  // The traces for inputs of this metadata: cached on a hit, acquired on a miss.
  std::shared_ptr<const Acquired> acquire_for(const std::vector<TensorMeta>& inputs);
  // The same from real tensors (their metadata is the key).
  std::shared_ptr<const Acquired> call_traces(const std::vector<at::Tensor>& inputs);
  // With the module's example inputs.
  std::shared_ptr<const Acquired> call_traces();

  int hits() const;
  int misses() const;
  size_t cache_size() const;
  std::shared_ptr<const Acquired> last() const;  // null before the first call
  bool last_was_hit() const;

  const Module& module() const { return module_; }
  Module& module() { return module_; }  // edits affect later keys

 private:
  Module module_;
  mutable std::mutex mutex_;
  std::vector<std::pair<CacheKey, std::shared_ptr<const Acquired>>> entries_;
  std::shared_ptr<const Acquired> last_;
  bool last_hit_ = false;
  int hits_ = 0;
  int misses_ = 0;
};

std::unique_ptr<JitModule> jit(Module module);

}  // namespace tv::jit
