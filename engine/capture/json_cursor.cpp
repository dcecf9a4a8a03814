#include "capture/json_cursor.h"

#include <cmath>
#include <limits>

#include "capture/capture.h"

namespace tv::capture_detail {

std::string escape_pointer_token(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string_view json_type_name(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return "number";
    case Json::value_t::string: return "string";
    case Json::value_t::array: return "array";
    case Json::value_t::object: return "object";
    case Json::value_t::binary: return "binary";
    case Json::value_t::discarded: return "nothing";
  }
  return "nothing";
}

void Cursor::fail(const std::string& message) const { throw CaptureError(*file_, path_, message); }

void Cursor::fail_expected(std::string_view what) const {
  fail("expected " + std::string(what) + ", found " + std::string(json_type_name(*value_)));
}

void Cursor::expect_object() const {
  if (!value_->is_object()) fail_expected("an object");
}

void Cursor::expect_array() const {
  if (!value_->is_array()) fail_expected("an array");
}

Cursor Cursor::field(std::string_view key) const {
  expect_object();
  auto it = value_->find(std::string(key));
  std::string path = path_ + "/" + escape_pointer_token(key);
  if (it == value_->end()) throw CaptureError(*file_, path, "missing required field \"" + std::string(key) + "\"");
  return Cursor(*it, std::move(path), *file_);
}

std::optional<Cursor> Cursor::optional_field(std::string_view key) const {
  expect_object();
  auto it = value_->find(std::string(key));
  if (it == value_->end() || it->is_null()) return std::nullopt;
  return Cursor(*it, path_ + "/" + escape_pointer_token(key), *file_);
}

size_t Cursor::size() const {
  expect_array();
  return value_->size();
}

Cursor Cursor::at(size_t index) const {
  expect_array();
  if (index >= value_->size()) fail("index " + std::to_string(index) + " is out of range");
  return Cursor((*value_)[index], path_ + "/" + std::to_string(index), *file_);
}

std::string Cursor::string() const {
  if (!value_->is_string()) fail_expected("a string");
  return value_->get<std::string>();
}

std::string Cursor::take_string() const {
  if (!value_->is_string()) fail_expected("a string");
  return std::move(const_cast<Json&>(*value_).get_ref<std::string&>());
}

bool Cursor::boolean() const {
  if (!value_->is_boolean()) fail_expected("a boolean");
  return value_->get<bool>();
}

int64_t Cursor::integer() const {
  if (value_->is_number_integer() && !value_->is_number_unsigned()) return value_->get<int64_t>();
  if (value_->is_number_unsigned()) {
    auto u = value_->get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) fail("integer " + std::to_string(u) + " is too large");
    return static_cast<int64_t>(u);
  }
  if (value_->is_number_float()) {
    // 2.0 is an integer (as JSON Schema says); 2.5 and 1e300 are not.
    double d = value_->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) return static_cast<int64_t>(d);
    fail("expected an integer, found number " + value_->dump());
  }
  fail_expected("an integer");
}

int Cursor::integer32() const {
  int64_t v = integer();
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    fail("integer " + std::to_string(v) + " is out of range");
  return static_cast<int>(v);
}

int64_t Cursor::integer_at_least(int64_t min) const {
  int64_t v = integer();
  if (v < min) fail("expected an integer of at least " + std::to_string(min) + ", found " + std::to_string(v));
  return v;
}

double Cursor::number() const {
  if (value_->is_number()) return value_->get<double>();
  if (value_->is_string()) {
    const auto& s = value_->get_ref<const std::string&>();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
    fail("expected a number (or \"NaN\", \"Infinity\", \"-Infinity\"), found string \"" + s.substr(0, 40) + "\"");
  }
  fail_expected("a number");
}

std::string string_field(const Cursor& c, std::string_view key) { return c.field(key).string(); }
bool bool_field(const Cursor& c, std::string_view key) { return c.field(key).boolean(); }
int int_field(const Cursor& c, std::string_view key) { return c.field(key).integer32(); }
double number_field(const Cursor& c, std::string_view key) { return c.field(key).number(); }

}  // namespace tv::capture_detail
