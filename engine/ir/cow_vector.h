// CowVector: a vector whose copies share one buffer until one of them is changed (copy on write).
// Contract: reads (the const members, and the implicit conversion to const std::vector&) never
// copy; a non-const member copies the buffer first when another CowVector shares it, so a change
// is seen through this one only. A stage copies the previous stage's statements and changes a
// few: their decompositions (subsymbols) are then shared, not copied. Not for one object changed
// from several threads (a std::vector is not either); reading shared buffers from several threads
// is safe, and so is copying them (the count is atomic).
// A CowVector is one pointer: a statement holds five of them, a value two, and a stage copies every
// statement.
#pragma once
#include <atomic>
#include <initializer_list>
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
  CowVector(std::vector<T> v) : buffer_(v.empty() ? nullptr : new Buffer{std::move(v)}) {}  // NOLINT
  CowVector(std::initializer_list<T> items) : buffer_(items.size() ? new Buffer{std::vector<T>(items)} : nullptr) {}
  CowVector(const CowVector& o) : buffer_(o.buffer_) {
    if (buffer_) buffer_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  CowVector(CowVector&& o) noexcept : buffer_(std::exchange(o.buffer_, nullptr)) {}
  CowVector& operator=(const CowVector& o) {
    CowVector copy(o);
    std::swap(buffer_, copy.buffer_);
    return *this;
  }
  CowVector& operator=(CowVector&& o) noexcept {
    CowVector moved(std::move(o));
    std::swap(buffer_, moved.buffer_);
    return *this;
  }
  ~CowVector() { release(); }

  // Reads.
  const std::vector<T>& vec() const { return buffer_ ? buffer_->items : no_items(); }
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
    if (!buffer_) {
      buffer_ = new Buffer{};
    } else if (buffer_->refs.load(std::memory_order_acquire) > 1) {
      auto* own = new Buffer{buffer_->items};
      release();
      buffer_ = own;
    }
    return buffer_->items;
  }
  T& operator[](size_t i) { return mutable_vec()[i]; }
  T& at(size_t i) { return mutable_vec().at(i); }
  T& front() { return mutable_vec().front(); }
  T& back() { return mutable_vec().back(); }
  // An empty vector gets no buffer for being walked: a value's items and entries are mostly empty.
  iterator begin() { return buffer_ ? mutable_vec().begin() : iterator(); }
  iterator end() { return buffer_ ? mutable_vec().end() : iterator(); }
  void push_back(const T& v) { mutable_vec().push_back(v); }
  void push_back(T&& v) { mutable_vec().push_back(std::move(v)); }
  template <class... Args>
  T& emplace_back(Args&&... args) {
    return mutable_vec().emplace_back(std::forward<Args>(args)...);
  }
  void reserve(size_t n) { mutable_vec().reserve(n); }
  void clear() {
    release();
    buffer_ = nullptr;
  }

  friend bool operator==(const CowVector& a, const CowVector& b) { return a.shares_with(b) || a.vec() == b.vec(); }
  friend bool operator!=(const CowVector& a, const CowVector& b) { return !(a == b); }

 private:
  struct Buffer {
    std::vector<T> items;
    std::atomic<long> refs{1};
  };
  static const std::vector<T>& no_items() {
    static const std::vector<T> none;
    return none;
  }
  void release() {
    if (buffer_ && buffer_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete buffer_;
  }
  Buffer* buffer_ = nullptr;
};

static_assert(sizeof(CowVector<int>) == sizeof(void*));

}  // namespace tv
