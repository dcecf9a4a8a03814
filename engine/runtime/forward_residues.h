// What a forward kernel computed besides its output, kept for the backward rule that would compute
// it again: layer norm's mean and rstd by input, attention's log-sum-exp by output. Internal to
// engine/exec (.cpp files only).
// Contract: `recall` gives the residue remembered for this very tensor (same TensorImpl, still
// alive, same version), or null. Entries of freed tensors are dropped as others come, and there
// are at most 4 096. A table is per thread (each rank runs its forward and backward on its thread);
// a miss only costs the recomputation.
#pragma once
#include <ATen/ATen.h>
#include <c10/util/intrusive_ptr.h>

#include <iterator>
#include <unordered_map>
#include <utility>

namespace tv::exec {

template <typename Residue>
class ResiduesByTensor {
 public:
  void remember(const at::Tensor& key, Residue residue) {
    if (by_tensor_.size() >= 256) forget_freed();
    if (by_tensor_.size() >= 4096) by_tensor_.clear();
    Entry e{c10::weak_intrusive_ptr<c10::TensorImpl>(key.getIntrusivePtr()), key._version(), std::move(residue)};
    by_tensor_.insert_or_assign(key.unsafeGetTensorImpl(), std::move(e));
  }
  const Residue* recall(const at::Tensor& key) const {
    auto it = by_tensor_.find(key.unsafeGetTensorImpl());
    if (it == by_tensor_.end()) return nullptr;
    const Entry& e = it->second;
    if (e.key.lock().get() != key.unsafeGetTensorImpl() || e.version != key._version()) return nullptr;
    return &e.residue;
  }

 private:
  struct Entry {
    c10::weak_intrusive_ptr<c10::TensorImpl> key;
    int64_t version;
    Residue residue;
  };
  void forget_freed() {
    for (auto it = by_tensor_.begin(); it != by_tensor_.end();)
      it = it->second.key.expired() ? by_tensor_.erase(it) : std::next(it);
  }
  std::unordered_map<const c10::TensorImpl*, Entry> by_tensor_;
};

// Whether `t` is the tensor `seen` was taken from, unchanged since (a residue's other inputs).
struct SeenTensor {
  c10::weak_intrusive_ptr<c10::TensorImpl> impl;
  int64_t version = 0;

  static SeenTensor of(const at::Tensor& t) {
    return {c10::weak_intrusive_ptr<c10::TensorImpl>(t.getIntrusivePtr()), t._version()};
  }
  bool is(const at::Tensor& t) const { return impl.lock().get() == t.unsafeGetTensorImpl() && version == t._version(); }
};

}  // namespace tv::exec
