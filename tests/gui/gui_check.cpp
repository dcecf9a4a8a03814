// tv_gui_check: the tiny checker the GUI tests use.
//   tv_gui_check nonblank A.png            exit 0 when the image has more than one colour
//   tv_gui_check differ A.png B.png        exit 0 when the images differ (size or a pixel)
//   tv_gui_check json FILE POINTER OP VALUE
//       OP: eq (VALUE is JSON), ne, contains (a string VALUE inside the string or inside any
//       string of the array at POINTER), ge / le (numbers), nonempty (VALUE ignored), oneof (VALUE: JSON list)
//   tv_gui_check get FILE POINTER          print the value (a string without quotes); exit 1 when absent
//   tv_gui_check same A.json PTR_A B.json PTR_B
//       exit 0 when both values exist and are equal JSON (numbers compared exactly)
//   tv_gui_check rules-drawn STATE.json CAPTURE.json
//       exit 0 when the state's /rules/drawn_cells show every cell of the capture's /rules/cells exactly
//       once, with the cell's verdict, a label naming it, one colour per verdict and distinct colours
//       for distinct verdicts
#include <stb_image.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <tuple>
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

bool read_json(const char* file, nlohmann::json* doc) {
  std::ifstream in(file);
  try {
    in >> *doc;
    return true;
  } catch (const std::exception& e) {
    std::cerr << file << ": not JSON: " << e.what() << "\n";
    return false;
  }
}

// The value at `pointer`, or null (with a message) when the file or the member is missing.
const nlohmann::json* at(const nlohmann::json& doc, const char* file, const std::string& pointer) {
  nlohmann::json::json_pointer ptr(pointer);
  if (doc.contains(ptr)) return &doc[ptr];
  std::cerr << file << ": no " << pointer << "\n";
  return nullptr;
}

int get(const char* file, const std::string& pointer) {
  nlohmann::json doc;
  if (!read_json(file, &doc)) return 2;
  const auto* v = at(doc, file, pointer);
  if (!v) return 1;
  std::cout << (v->is_string() ? v->get<std::string>() : v->dump()) << "\n";
  return 0;
}

int same(const char* file_a, const std::string& ptr_a, const char* file_b, const std::string& ptr_b) {
  nlohmann::json a, b;
  if (!read_json(file_a, &a) || !read_json(file_b, &b)) return 2;
  const auto* va = at(a, file_a, ptr_a);
  const auto* vb = at(b, file_b, ptr_b);
  if (!va || !vb) return 1;
  if (*va == *vb) return 0;
  std::cerr << file_a << " " << ptr_a << " = " << va->dump() << "\n  differs from " << file_b << " " << ptr_b << " = "
            << vb->dump() << "\n";
  return 1;
}

int rules_drawn(const char* state_file, const char* capture_file) {
  nlohmann::json state, capture;
  if (!read_json(state_file, &state) || !read_json(capture_file, &capture)) return 2;
  const auto* drawn = at(state, state_file, "/rules/drawn_cells");
  const auto* cells = at(capture, capture_file, "/rules/cells");
  if (!drawn || !cells) return 1;
  int errors = 0;
  auto fail = [&](const std::string& what) {
    std::cerr << what << "\n";
    ++errors;
  };
  if (cells->empty()) fail(std::string(capture_file) + ": the matrix has no cells");
  // The panel draws the lazy cells, and the cells of other semantics modes that differ from them.
  auto outcome_of = [](const nlohmann::json& c) { return std::tuple(c["verdict"], c["outcome"], c["rule"]); };
  auto shown = [&](const nlohmann::json& cell) {
    if (cell.value("semantics", "lazy") == "lazy") return true;
    for (const auto& lazy : *cells)
      if (lazy.value("semantics", "lazy") == "lazy" && lazy["order"] == cell["order"])
        return outcome_of(lazy) != outcome_of(cell);
    return true;
  };
  size_t expected = 0;
  for (const auto& cell : *cells) expected += shown(cell) ? 1 : 0;
  if (drawn->size() != expected)
    fail("drew " + std::to_string(drawn->size()) + " cells, the capture has " + std::to_string(expected) + " to show");
  std::map<std::string, nlohmann::json> colour_of;  // verdict -> colour
  for (const auto& cell : *cells) {
    if (!shown(cell)) continue;
    std::string name = cell["order"].dump() + " " + cell.value("semantics", "lazy");
    // The word a cell shows: its verdict, or the outcome that made it not comparable.
    std::string verdict = cell["verdict"] == "not comparable" ? cell["outcome"] : cell["verdict"];
    int found = 0;
    for (const auto& d : *drawn) {
      if (d["order"] != cell["order"] || d["semantics"] != cell.value("semantics", "lazy")) continue;
      ++found;
      if (d["verdict"] != verdict) fail(name + ": drawn as " + d["verdict"].dump() + ", the capture says " + verdict);
      if (d["label"].get<std::string>().find(verdict) == std::string::npos)
        fail(name + ": label " + d["label"].dump() + " does not name the verdict " + verdict);
      auto [it, fresh] = colour_of.emplace(verdict, d["colour"]);
      if (!fresh && it->second != d["colour"]) fail(name + ": another colour than other " + verdict + " cells");
    }
    if (found != 1) fail(name + ": drawn " + std::to_string(found) + " times");
  }
  for (const auto& [a, ca] : colour_of)
    for (const auto& [b, cb] : colour_of)
      if (a < b && ca == cb) fail("verdicts " + a + " and " + b + " are drawn in the same colour");
  return errors ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "nonblank" && argc == 3) return nonblank(argv[2]);
  if (cmd == "differ" && argc == 4) return differ(argv[2], argv[3]);
  if (cmd == "json" && (argc == 6 || argc == 5)) return json_check(argv[2], argv[3], argv[4], argc == 6 ? argv[5] : "");
  if (cmd == "get" && argc == 4) return get(argv[2], argv[3]);
  if (cmd == "same" && argc == 6) return same(argv[2], argv[3], argv[4], argv[5]);
  if (cmd == "rules-drawn" && argc == 4) return rules_drawn(argv[2], argv[3]);
  std::cerr << "usage: tv_gui_check nonblank A.png | differ A.png B.png | json FILE POINTER OP [VALUE]\n"
               "       | get FILE POINTER | same A.json PTR_A B.json PTR_B | rules-drawn STATE.json CAPTURE.json\n";
  return 2;
}
