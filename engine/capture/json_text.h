// Strict JSON text: nlohmann's parser, with what it lets through or reports without a place made
// errors that name the value.
// Contract: parse_json_strict<J>(text) returns the document, or throws
//  - nlohmann's parse_error for malformed text (its byte gives line and column), first,
//  - JsonTextError for a key that appears twice in one object (nlohmann keeps the last silently)
//    and for a number outside double range such as 1e400 (nlohmann's out_of_range names no
//    place), with the RFC 6901 path of the value ("/models/0/params/layers").
#pragma once
#include <optional>
#include <stdexcept>
#include <string>
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
J parse_json_strict(const std::string& text) {
  struct Frame {
    bool array = false;
    size_t index = 0;               // arrays: the element being read
    std::string key;                // objects: the member being read
    std::unordered_set<std::string> keys;  // objects: the members read so far (a large map stays linear)
  };
  std::vector<Frame> frames;
  std::optional<JsonTextError> duplicate;  // reported once the whole text is known to be JSON
  auto path = [&frames] {
    std::string out;
    for (const auto& f : frames) {
      out += '/';
      if (f.array) {
        out += std::to_string(f.index);
        continue;
      }
      for (char c : f.key) out += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
    }
    return out;
  };
  auto finished_value = [&frames] {
    if (!frames.empty() && frames.back().array) ++frames.back().index;
  };
  using Event = typename J::parse_event_t;
  auto track = [&](int, Event event, J& parsed) {
    switch (event) {
      case Event::object_start: frames.emplace_back(); break;
      case Event::array_start:
        frames.emplace_back();
        frames.back().array = true;
        break;
      case Event::key: {
        auto& f = frames.back();
        f.key = parsed.template get<std::string>();
        if (!f.keys.insert(f.key).second && !duplicate)
          duplicate = JsonTextError(path(), "the key \"" + f.key + "\" appears twice in this object; keep one");
        break;
      }
      case Event::object_end:
      case Event::array_end:
        frames.pop_back();
        finished_value();
        break;
      case Event::value: finished_value(); break;
    }
    return true;
  };
  try {
    J document = J::parse(text, track);
    if (duplicate) throw *duplicate;
    return document;
  } catch (const typename J::out_of_range& e) {
    std::string what = e.what();
    if (auto at = what.find("] "); at != std::string::npos) what = what.substr(at + 2);
    throw JsonTextError(path(), what + " (a number outside the range of a double: at most about 1.8e308)");
  }
}

}  // namespace tv::capture_detail
