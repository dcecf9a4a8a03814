#include "jit/cache.h"

#include <ATen/ATen.h>

namespace tv::jit {

CacheKey CacheKey::of(const Module& m, const std::vector<TensorMeta>& inputs) {
  CacheKey k;
  k.inputs = inputs;
  for (const auto* list : {&m.parameters, &m.buffers})
    for (const auto& t : *list) k.tensors.push_back(t.meta());
  k.attributes = m.attributes;
  return k;
}

std::string CacheKey::str() const {
  std::string out = "inputs(";
  for (size_t i = 0; i < inputs.size(); ++i) out += (i ? ", " : "") + inputs[i].str();
  out += ") tensors(";
  for (size_t i = 0; i < tensors.size(); ++i) out += (i ? ", " : "") + tensors[i].str();
  out += ") attributes(";
  for (size_t i = 0; i < attributes.size(); ++i)
    out += (i ? ", " : "") + attributes[i].first + "=" + attr_text(attributes[i].second);
  return out + ")";
}

JitModule::JitModule(Module module) : module_(std::move(module)) {}

std::shared_ptr<const Acquired> JitModule::acquire_for(const std::vector<TensorMeta>& inputs) {
  std::lock_guard lock(mutex_);
  auto key = CacheKey::of(module_, inputs);
  for (const auto& [k, traces] : entries_)
    if (k == key) {
      ++hits_;
      last_ = traces;
      last_hit_ = true;
      return traces;
    }
  ++misses_;
  auto traces = std::make_shared<const Acquired>(acquire(module_, inputs));
  entries_.emplace_back(std::move(key), traces);
  last_ = traces;
  last_hit_ = false;
  return traces;
}

std::shared_ptr<const Acquired> JitModule::call_traces(const std::vector<at::Tensor>& inputs) {
  std::vector<TensorMeta> metas;
  for (const auto& t : inputs) metas.push_back(TensorMeta::of(t));
  return acquire_for(metas);
}

std::shared_ptr<const Acquired> JitModule::call_traces() { return acquire_for(module_.input_metadata()); }

int JitModule::hits() const {
  std::lock_guard lock(mutex_);
  return hits_;
}
int JitModule::misses() const {
  std::lock_guard lock(mutex_);
  return misses_;
}
size_t JitModule::cache_size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}
std::shared_ptr<const Acquired> JitModule::last() const {
  std::lock_guard lock(mutex_);
  return last_;
}
bool JitModule::last_was_hit() const {
  std::lock_guard lock(mutex_);
  return last_hit_;
}

std::unique_ptr<JitModule> jit(Module module) { return std::make_unique<JitModule>(std::move(module)); }

}  // namespace tv::jit
