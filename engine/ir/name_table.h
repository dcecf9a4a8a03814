// Sets and tables keyed by proxy name, for passes that look up a name for every argument of a
// trace.
// Contract: a key is a view of a name that outlives the table (a proxy's own name). A name the
// builder writes ("t7", see default_name_number; below "t1048576") is kept in an array indexed by
// its number, any other name in a hash table: over a deep trace the lookups then allocate nothing
// and stay within one small array, where a hash table's nodes lie all over the heap. No iteration
// (there is no order to promise).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tv {

// The number of a name the builder writes with the default prefix ("t7" -> 7), -1 for any other
// name ("t07", "t", "x7", a number of more than seven digits).
int64_t default_name_number(std::string_view name);

namespace name_table_detail {
// The index of `name` in a table's array, -1 for a name the table keeps hashed. Numbers from 2^20
// up are hashed too, so that one odd name ("t9999999") does not make an array of ten million.
inline int64_t dense_index(std::string_view name) {
  const int64_t n = default_name_number(name);
  return n < (int64_t{1} << 20) ? n : -1;
}
}  // namespace name_table_detail

template <class T>
class NameMap {
 public:
  const T* find(std::string_view name) const {
    const int64_t n = name_table_detail::dense_index(name);
    if (n < 0) {
      auto it = other_.find(name);
      return it == other_.end() ? nullptr : &it->second;
    }
    const auto k = static_cast<size_t>(n);
    return k < present_.size() && present_[k] ? &dense_[k] : nullptr;
  }
  T* find(std::string_view name) { return const_cast<T*>(std::as_const(*this).find(name)); }
  bool contains(std::string_view name) const { return find(name) != nullptr; }

  // The entry of `name`, made with `value` when there was none; and whether it was made.
  std::pair<T*, bool> emplace(std::string_view name, T value) {
    const int64_t n = name_table_detail::dense_index(name);
    if (n < 0) {
      auto [it, made] = other_.emplace(name, std::move(value));
      return {&it->second, made};
    }
    const auto k = static_cast<size_t>(n);
    if (k >= present_.size()) {
      const size_t size = std::max<size_t>({k + 1, present_.size() * 2, 64});
      present_.resize(size, false);
      dense_.resize(size);
    }
    if (present_[k]) return {&dense_[k], false};
    present_[k] = true;
    dense_[k] = std::move(value);
    return {&dense_[k], true};
  }
  T& operator[](std::string_view name) { return *emplace(name, T{}).first; }

 private:
  std::vector<bool> present_;
  std::vector<T> dense_;
  std::unordered_map<std::string_view, T> other_;
};

class NameSet {
 public:
  bool contains(std::string_view name) const {
    const int64_t n = name_table_detail::dense_index(name);
    if (n < 0) return other_.count(name) > 0;
    return static_cast<size_t>(n) < present_.size() && present_[static_cast<size_t>(n)];
  }
  // Whether the name was not in the set before.
  bool insert(std::string_view name) {
    const int64_t n = name_table_detail::dense_index(name);
    if (n < 0) return other_.insert(name).second;
    const auto k = static_cast<size_t>(n);
    if (k >= present_.size()) present_.resize(std::max<size_t>({k + 1, present_.size() * 2, 64}), false);
    if (present_[k]) return false;
    present_[k] = true;
    return true;
  }

 private:
  std::vector<bool> present_;
  std::unordered_set<std::string_view> other_;
};

}  // namespace tv
