// tv_gui_check: the tiny checker the GUI tests use.
//   tv_gui_check nonblank A.png            exit 0 when the image has more than one colour
//   tv_gui_check differ A.png B.png        exit 0 when the images differ (size or a pixel)
//   tv_gui_check json FILE POINTER OP VALUE
//       OP: eq (VALUE is JSON), ne, contains (a string VALUE inside the string or inside any
//       string of the array at POINTER), ge / le (numbers), nonempty (VALUE ignored), oneof (VALUE: JSON list)
#include <stb_image.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

struct Image {
  int w = 0, h = 0;
  std::vector<unsigned char> rgba;
};

bool load(const char* path, Image* out) {
  int n = 0;
  unsigned char* data = stbi_load(path, &out->w, &out->h, &n, 4);
  if (!data) {
    std::cerr << path << ": cannot read PNG: " << stbi_failure_reason() << "\n";
    return false;
  }
  out->rgba.assign(data, data + static_cast<size_t>(out->w) * out->h * 4);
  stbi_image_free(data);
  return true;
}

int nonblank(const char* path) {
  Image img;
  if (!load(path, &img)) return 2;
  for (size_t i = 4; i < img.rgba.size(); ++i)
    if (img.rgba[i] != img.rgba[i % 4]) return 0;
  std::cerr << path << ": a single colour\n";
  return 1;
}

int differ(const char* a, const char* b) {
  Image x, y;
  if (!load(a, &x) || !load(b, &y)) return 2;
  if (x.w != y.w || x.h != y.h || x.rgba != y.rgba) return 0;
  std::cerr << a << " and " << b << " are identical\n";
  return 1;
}

bool contains(const nlohmann::json& v, const std::string& s) {
  if (v.is_string()) return v.get<std::string>().find(s) != std::string::npos;
  if (v.is_array() || v.is_object())
    for (const auto& item : v)
      if (contains(item, s)) return true;
  return false;
}

int json_check(const char* file, const std::string& pointer, const std::string& op, const std::string& value) {
  std::ifstream in(file);
  nlohmann::json doc;
  try {
    in >> doc;
  } catch (const std::exception& e) {
    std::cerr << file << ": not JSON: " << e.what() << "\n";
    return 2;
  }
  nlohmann::json::json_pointer ptr(pointer);
  if (!doc.contains(ptr)) {
    std::cerr << file << ": no " << pointer << "\n";
    return 1;
  }
  const auto& v = doc[ptr];
  bool ok = false;
  if (op == "eq") ok = v == nlohmann::json::parse(value);
  else if (op == "ne") ok = v != nlohmann::json::parse(value);
  else if (op == "contains") ok = contains(v, value);
  else if (op == "ge") ok = v.is_number() && v.get<double>() >= std::stod(value);
  else if (op == "le") ok = v.is_number() && v.get<double>() <= std::stod(value);
  else if (op == "nonempty") ok = !v.empty() && v != "";
  else if (op == "oneof") {
    for (const auto& item : nlohmann::json::parse(value)) ok = ok || v == item;
  } else {
    std::cerr << "unknown op " << op << "\n";
    return 2;
  }
  if (!ok) std::cerr << file << ": " << pointer << " = " << v.dump() << ", expected " << op << " " << value << "\n";
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "nonblank" && argc == 3) return nonblank(argv[2]);
  if (cmd == "differ" && argc == 4) return differ(argv[2], argv[3]);
  if (cmd == "json" && (argc == 6 || argc == 5)) return json_check(argv[2], argv[3], argv[4], argc == 6 ? argv[5] : "");
  std::cerr << "usage: tv_gui_check nonblank A.png | differ A.png B.png | json FILE POINTER OP [VALUE]\n";
  return 2;
}
