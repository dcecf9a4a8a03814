// CowVector: a vector whose copies share one buffer until one of them is changed (copy on write).
// Contract: reads (the const members, and the implicit conversion to const std::vector&) never
// copy; a non-const member copies the buffer first when another CowVector shares it, so a change
// is seen through this one only. A stage copies the previous stage's statements and changes a
// few: their decompositions (subsymbols) are then shared, not copied. Not for one object changed
// from several threads (a std::vector is not either); reading shared buffers from several threads
// is safe.
#pragma once
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

namespace tv {

template <class T>
class CowVector {
 public:
  using value_type = T;
  using const_iterator = typename std::vector<T>::const_iterator;
  using iterator = typename std::vector<T>::iterator;

  CowVector() = default;
  CowVector(std::vector<T> v) : buffer_(v.empty() ? nullptr : std::make_shared<std::vector<T>>(std::move(v))) {}  // NOLINT
  CowVector(std::initializer_list<T> items) : CowVector(std::vector<T>(items)) {}

  // Reads.
  const std::vector<T>& vec() const { return buffer_ ? *buffer_ : no_items(); }
  operator const std::vector<T>&() const { return vec(); }  // NOLINT: read as a vector
  size_t size() const { return vec().size(); }
  bool empty() const { return vec().empty(); }
  const T& operator[](size_t i) const { return vec()[i]; }
  const T& at(size_t i) const { return vec().at(i); }
  const T& front() const { return vec().front(); }
  const T& back() const { return vec().back(); }
  const_iterator begin() const { return vec().begin(); }
  const_iterator end() const { return vec().end(); }
  // Whether two vectors share one buffer (then they are equal).
  bool shares_with(const CowVector& other) const { return buffer_ && buffer_ == other.buffer_; }

  // Changes: on this vector's own buffer.
  std::vector<T>& mutable_vec() {
    if (!buffer_)
      buffer_ = std::make_shared<std::vector<T>>();
    else if (buffer_.use_count() > 1)
      buffer_ = std::make_shared<std::vector<T>>(*buffer_);
    return *buffer_;
  }
  T& operator[](size_t i) { return mutable_vec()[i]; }
  T& at(size_t i) { return mutable_vec().at(i); }
  T& front() { return mutable_vec().front(); }
  T& back() { return mutable_vec().back(); }
  iterator begin() { return mutable_vec().begin(); }
  iterator end() { return mutable_vec().end(); }
  void push_back(const T& v) { mutable_vec().push_back(v); }
  void push_back(T&& v) { mutable_vec().push_back(std::move(v)); }
  template <class... Args>
  T& emplace_back(Args&&... args) {
    return mutable_vec().emplace_back(std::forward<Args>(args)...);
  }
  void reserve(size_t n) { mutable_vec().reserve(n); }
  void clear() { buffer_.reset(); }

  friend bool operator==(const CowVector& a, const CowVector& b) { return a.shares_with(b) || a.vec() == b.vec(); }
  friend bool operator!=(const CowVector& a, const CowVector& b) { return !(a == b); }

 private:
  static const std::vector<T>& no_items() {
    static const std::vector<T> none;
    return none;
  }
  std::shared_ptr<std::vector<T>> buffer_;
};

}  // namespace tv
