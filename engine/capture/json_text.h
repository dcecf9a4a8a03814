// Strict JSON text: nlohmann's lexer and parser, with a document builder of our own that reports
// what nlohmann lets through or reports without a place as errors that name the value.
// Contract: parse_json_strict<J>(text) returns the document, or throws
//  - nlohmann's parse_error for malformed text (its byte gives line and column), first,
//  - JsonTextError for a key that appears twice in one object (nlohmann keeps the last silently)
//    and for a number outside double range such as 1e400 (nlohmann's out_of_range names no
//    place), with the RFC 6901 path of the value ("/models/0/params/layers").
// Members keep the order of the text. Strings are moved into the document, not copied, and an
// ordered object's members are appended without nlohmann's search of the members before them
// (quadratic in a large object); duplicates are found by a scan of a small object's keys or a
// hash set of a large one's.
#pragma once
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

namespace tv::capture_detail {

class JsonTextError : public std::runtime_error {
 public:
  JsonTextError(std::string path, const std::string& message) : std::runtime_error(message), path_(std::move(path)) {}
  const std::string& path() const { return path_; }  // "" is the whole document

 private:
  std::string path_;
};

template <class J>
class StrictDocumentBuilder {
 public:
  using Object = typename J::object_t;
  using Array = typename J::array_t;
  using String = typename J::string_t;
  // nlohmann::ordered_json's object is a vector of members: append to it directly.
  static constexpr bool kMembersInAVector = std::is_base_of_v<std::vector<typename Object::value_type>, Object>;

  J take_document() { return std::move(document_); }
  const std::optional<JsonTextError>& duplicate() const { return duplicate_; }

  bool null() { return add(J(nullptr)); }
  bool boolean(bool v) { return add(J(v)); }
  bool number_integer(typename J::number_integer_t v) { return add(J(v)); }
  bool number_unsigned(typename J::number_unsigned_t v) { return add(J(v)); }
  bool number_float(typename J::number_float_t v, const String&) { return add(J(v)); }
  bool string(String& v) { return add(J(std::move(v))); }
  bool binary(typename J::binary_t& v) { return add(J(std::move(v))); }

  bool start_object(std::size_t) {
    J* object = place(J(J::value_t::object));
    frames_.emplace_back();
    frames_.back().container = object;
    return true;
  }
  bool key(String& k) {
    Frame& f = frames_.back();
    f.key = std::move(k);
    if (!duplicate_ && appeared_before(f))
      duplicate_ = JsonTextError(path(), "the key \"" + f.key + "\" appears twice in this object; keep one");
    return true;
  }
  bool end_object() {
    Frame& f = frames_.back();
    auto& members = f.container->template get_ref<Object&>();
    if constexpr (kMembersInAVector) {
      auto& as_vector = static_cast<std::vector<typename Object::value_type>&>(members);
      as_vector.reserve(f.members.size());
      for (auto& [k, v] : f.members) as_vector.emplace_back(std::move(k), std::move(v));
    } else {
      for (auto& [k, v] : f.members) members.emplace_hint(members.end(), std::move(k), std::move(v));
    }
    return end_container();
  }
  bool start_array(std::size_t) {
    J* array = place(J(J::value_t::array));
    frames_.emplace_back();
    frames_.back().container = array;
    frames_.back().array = true;
    return true;
  }
  bool end_array() { return end_container(); }

  template <class Exception>
  bool parse_error(std::size_t, const std::string&, const Exception& e) {
    if constexpr (std::is_same_v<Exception, typename J::out_of_range>) {
      std::string what = e.what();
      if (auto at = what.find("] "); at != std::string::npos) what = what.substr(at + 2);
      throw JsonTextError(path(), what + " (a number outside the range of a double: at most about 1.8e308)");
    } else {
      throw e;
    }
  }

 private:
  // An open array or object. An object's members wait in `members` until it closes: they move
  // there as its elements are read (an ordered_json member, whose key is const, would be copied,
  // value and all, each time its vector grows).
  struct Frame {
    J* container = nullptr;
    bool array = false;
    size_t index = 0;      // arrays: the element being read
    std::string key;       // objects: the member being read
    std::vector<std::pair<String, J>> members;
    std::unique_ptr<std::unordered_set<std::string>> keys;  // a large object's keys read so far
    size_t hashed = 0;     // how many of its members `keys` holds
  };
  static constexpr size_t kScannedMembers = 16;

  // Where a new value goes: the document, the open array's end, or the open object's current key.
  J* place(J&& value) {
    if (frames_.empty()) {
      document_ = std::move(value);
      return &document_;
    }
    Frame& f = frames_.back();
    if (f.array) {
      auto& elements = f.container->template get_ref<Array&>();
      elements.push_back(std::move(value));
      return &elements.back();
    }
    f.members.emplace_back(f.key, std::move(value));
    return &f.members.back().second;
  }
  // A value is finished: an open array moves on to its next element.
  void finished() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
  }
  bool add(J&& value) {
    place(std::move(value));
    finished();
    return true;
  }
  bool end_container() {
    frames_.pop_back();
    finished();
    return true;
  }

  static bool appeared_before(Frame& f) {
    if (f.members.size() < kScannedMembers) {
      for (const auto& m : f.members)
        if (m.first == f.key) return true;
      return false;
    }
    if (!f.keys) f.keys = std::make_unique<std::unordered_set<std::string>>();
    for (; f.hashed < f.members.size(); ++f.hashed) f.keys->insert(f.members[f.hashed].first);
    return f.keys->count(f.key) != 0;
  }

  std::string path() const {
    std::string out;
    for (const auto& f : frames_) {
      out += '/';
      if (f.array) {
        out += std::to_string(f.index);
        continue;
      }
      for (char c : f.key) out += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
    }
    return out;
  }

  J document_;
  std::vector<Frame> frames_;
  std::optional<JsonTextError> duplicate_;  // reported once the whole text is known to be JSON
};

template <class J>
J parse_json_strict(std::string_view text) {
  StrictDocumentBuilder<J> builder;
  J::sax_parse(text.data(), text.data() + text.size(), &builder);
  if (builder.duplicate()) throw *builder.duplicate();
  return builder.take_document();
}

}  // namespace tv::capture_detail
