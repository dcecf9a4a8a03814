// A read-only view of one value inside a JSON document that knows its own JSON path.
// Contract: every accessor checks presence and type and, on a mismatch, throws CaptureError with
// the file, the RFC 6901 path of the value ("/pipelines/0/stages/forward/2/text") and what was
// expected ("expected a string, found number"). Nothing here trusts the document: a cursor never
// reads out of range and never recurses.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tv::capture_detail {

using Json = nlohmann::ordered_json;

// "~" → "~0" and "/" → "~1", as RFC 6901 asks.
std::string escape_pointer_token(std::string_view key);
// "null", "boolean", "number", "string", "array", "object".
std::string_view json_type_name(const Json&);

class Cursor {
 public:
  Cursor(const Json& value, std::string path, const std::string& file) : value_(&value), path_(std::move(path)), file_(&file) {}

  const Json& json() const { return *value_; }
  const std::string& path() const { return path_; }
  const std::string& file() const { return *file_; }

  // Members of an object. `field` requires the key; `optional_field` gives nullopt when the key
  // is absent or null. Both require this value to be an object.
  Cursor field(std::string_view key) const;
  std::optional<Cursor> optional_field(std::string_view key) const;
  // Elements of an array (requires an array).
  size_t size() const;
  Cursor at(size_t index) const;

  // Typed reads of this value.
  void expect_object() const;
  void expect_array() const;
  std::string string() const;
  // The string, moved out of the document: for the long stored texts, which a copy would double.
  // Only for a document its reader owns and drops afterwards (decode_capture's).
  std::string take_string() const;
  bool boolean() const;
  int64_t integer() const;                                   // a JSON integer, no fraction
  int integer32() const;                                     // an integer that fits in an int
  int64_t integer_at_least(int64_t min) const;
  double number() const;                                     // a number, or "NaN"/"Infinity"/"-Infinity"

  [[noreturn]] void fail(const std::string& message) const;
  [[noreturn]] void fail_expected(std::string_view what) const;  // "expected W, found T"

 private:
  const Json* value_;
  std::string path_;
  const std::string* file_;
};

// Shorthand readers of a required member.
std::string string_field(const Cursor& c, std::string_view key);
bool bool_field(const Cursor& c, std::string_view key);
int int_field(const Cursor& c, std::string_view key);
double number_field(const Cursor& c, std::string_view key);

}  // namespace tv::capture_detail
