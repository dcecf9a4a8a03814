// Shared<T>: an immutable T that copies share, held by one pointer.
// Contract: null (the default) or one T made by `make`, never changed afterwards; a copy shares it
// and the last copy dropped frees it. The count lives beside the T (atomic: copies may be made and
// dropped on several threads), so a Shared is half a std::shared_ptr: a statement holds several,
// and a stage copies every statement.
#pragma once
#include <atomic>
#include <cstddef>
#include <utility>

namespace tv {

template <class T>
class Shared {
 public:
  Shared() = default;
  Shared(std::nullptr_t) {}  // NOLINT: null as a Shared
  template <class... Args>
  static Shared make(Args&&... args) {
    Shared s;
    s.rep_ = new Rep{T(std::forward<Args>(args)...)};
    return s;
  }
  Shared(const Shared& o) : rep_(o.rep_) {
    if (rep_) rep_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  Shared(Shared&& o) noexcept : rep_(std::exchange(o.rep_, nullptr)) {}
  Shared& operator=(Shared o) noexcept {
    std::swap(rep_, o.rep_);
    return *this;
  }
  ~Shared() {
    if (rep_ && rep_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete rep_;
  }

  const T& operator*() const { return rep_->value; }
  const T* operator->() const { return &rep_->value; }
  const T* get() const { return rep_ ? &rep_->value : nullptr; }
  explicit operator bool() const { return rep_ != nullptr; }

  // The same object (not merely equal values).
  friend bool operator==(const Shared& a, const Shared& b) { return a.rep_ == b.rep_; }
  friend bool operator==(const Shared& a, std::nullptr_t) { return a.rep_ == nullptr; }

 private:
  struct Rep {
    T value;
    std::atomic<long> refs{1};
  };
  Rep* rep_ = nullptr;
};

}  // namespace tv
