#include "cli/batch_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>

#include "capture/json_text.h"
#include "cli/command.h"
#include "jit/zoo.h"
#include "transforms/semantics.h"
#include "transforms/transform.h"

namespace tv::cli {

namespace {

using Json = nlohmann::json;

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Throws the config error: file, JSON path ("" is the whole document), message.
[[noreturn]] void fail(const std::string& file, const std::string& path, const std::string& message) {
  throw BadInput(fmt::format("{}: {}: {}", file, path.empty() ? "(document)" : path, message));
}

std::string type_name(const Json& j) { return j.type_name(); }

// "line L, column C" of a byte offset.
std::string position(const std::string& text, size_t offset) {
  offset = std::min(offset, text.size());
  auto line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(offset), '\n');
  auto last = text.rfind('\n', offset ? offset - 1 : 0);
  size_t column = last == std::string::npos || offset == 0 ? offset : offset - last - 1;
  return fmt::format("line {}, column {}", line, column + 1);
}

std::string scalar_text(const std::string& file, const std::string& path, const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return v.dump();
  fail(file, path, "expected a string, number or boolean, found " + type_name(v));
}

const Json& array_member(const std::string& file, const Json& doc, const char* key) {
  const auto& v = doc.at(key);
  if (!v.is_array() || v.empty()) fail(file, std::string("/") + key, "expected a non-empty array, found " + (v.is_array() ? std::string("an empty array") : type_name(v)));
  return v;
}

BatchModel read_model(const std::string& file, const std::string& path, const Json& v) {
  BatchModel m;
  std::string name_path = path;
  if (v.is_string()) {
    m.name = v.get<std::string>();
  } else if (v.is_object()) {
    for (const auto& [key, _] : v.items())
      if (key != "name" && key != "params") fail(file, path + "/" + key, "unknown member; valid members: name, params");
    name_path = path + "/name";
    if (!v.contains("name") || !v["name"].is_string()) fail(file, name_path, "expected the model's name (a string)");
    m.name = v["name"].get<std::string>();
    if (v.contains("params")) {
      if (!v["params"].is_object()) fail(file, path + "/params", "expected an object, found " + type_name(v["params"]));
      for (const auto& [key, value] : v["params"].items()) m.params[key] = scalar_text(file, path + "/params/" + key, value);
    }
  } else {
    fail(file, path, "expected a model name or {\"name\": ..., \"params\": {...}}, found " + type_name(v));
  }
  std::vector<std::string> names;
  for (const auto& info : jit::list_models()) names.push_back(info.name);
  if (std::find(names.begin(), names.end(), m.name) == names.end())
    fail(file, name_path, fmt::format("unknown model '{}'; valid models: {}", m.name, joined(names)));
  try {
    jit::check_model(m.name, m.params);  // parameter names and values, without building the weights
  } catch (const std::invalid_argument& e) {
    fail(file, path + "/params", e.what());
  }
  return m;
}

std::vector<std::string> read_order(const std::string& file, const std::string& path, const Json& v) {
  if (!v.is_string()) fail(file, path, "expected an order such as \"jit,ddp\", found " + type_name(v));
  auto text = v.get<std::string>();
  std::vector<std::string> order;
  auto known = transform_names();
  size_t start = 0;
  while (start <= text.size()) {
    auto end = std::min(text.find(',', start), text.size());
    auto name = text.substr(start, end - start);
    if (std::find(known.begin(), known.end(), name) == known.end())
      fail(file, path, fmt::format("unknown transform '{}' in \"{}\"; valid transforms: {}", name, text, joined(known)));
    order.push_back(name);
    start = end + 1;
  }
  return order;
}

}  // namespace

BatchConfig load_batch_config(const std::string& file) {
  auto text = read_text_file(file);
  Json doc;
  try {
    doc = capture_detail::parse_json_strict<Json>(text);
  } catch (const capture_detail::JsonTextError& e) {
    fail(file, e.path(), e.what());
  } catch (const Json::parse_error& e) {
    fail(file, "", fmt::format("not valid JSON at {}: {}", position(text, e.byte ? e.byte - 1 : 0), e.what()));
  }
  if (!doc.is_object()) fail(file, "", "expected an object with models, orders, world_sizes, devices; found " + type_name(doc));
  for (const auto& [key, _] : doc.items())
    if (key != "models" && key != "orders" && key != "world_sizes" && key != "devices" && key != "semantics")
      fail(file, "/" + key, "unknown member; valid members: models, orders, world_sizes, devices, semantics");
  if (!doc.contains("models")) fail(file, "/models", "missing required member \"models\" (e.g. [\"linear\", \"mlp\"])");
  BatchConfig c;
  const auto& models = array_member(file, doc, "models");
  for (size_t i = 0; i < models.size(); ++i) c.models.push_back(read_model(file, fmt::format("/models/{}", i), models[i]));
  for (size_t i = 0; i < c.models.size(); ++i) {
    auto& m = c.models[i];
    auto same = std::count_if(c.models.begin(), c.models.end(), [&](const BatchModel& o) { return o.name == m.name; });
    m.id = same > 1 ? fmt::format("{}_m{}", m.name, i) : m.name;
  }
  if (doc.contains("orders")) {
    c.orders.clear();
    const auto& orders = array_member(file, doc, "orders");
    for (size_t i = 0; i < orders.size(); ++i) c.orders.push_back(read_order(file, fmt::format("/orders/{}", i), orders[i]));
  }
  if (doc.contains("world_sizes")) {
    c.world_sizes.clear();
    const auto& worlds = array_member(file, doc, "world_sizes");
    for (size_t i = 0; i < worlds.size(); ++i) {
      const auto& w = worlds[i];
      if (!w.is_number_integer() || w.get<int64_t>() < 1 || w.get<int64_t>() > 64)
        fail(file, fmt::format("/world_sizes/{}", i), "expected an integer from 1 to 64, found " + w.dump());
      c.world_sizes.push_back(w.get<int>());
    }
  }
  if (doc.contains("devices")) {
    c.devices.clear();
    const auto& devices = array_member(file, doc, "devices");
    static const std::regex valid("cpu|cuda(:[0-9]+)?");
    for (size_t i = 0; i < devices.size(); ++i) {
      const auto& d = devices[i];
      if (!d.is_string() || !std::regex_match(d.get<std::string>(), valid))
        fail(file, fmt::format("/devices/{}", i), "expected \"cpu\", \"cuda\" or \"cuda:N\", found " + d.dump());
      c.devices.push_back(d.get<std::string>() == "cuda" ? "cuda:0" : d.get<std::string>());
    }
  }
  if (doc.contains("semantics")) {
    c.semantics.clear();
    const auto& modes = array_member(file, doc, "semantics");
    const auto known = semantics_names();
    for (size_t i = 0; i < modes.size(); ++i) {
      const auto& mode = modes[i];
      if (!mode.is_string() || std::find(known.begin(), known.end(), mode.get<std::string>()) == known.end())
        fail(file, fmt::format("/semantics/{}", i),
             fmt::format("expected a semantics mode, found {}; valid modes: {}", mode.dump(), joined(known)));
      if (std::find(c.semantics.begin(), c.semantics.end(), mode.get<std::string>()) != c.semantics.end())
        fail(file, fmt::format("/semantics/{}", i), fmt::format("{} appears twice", mode.dump()));
      c.semantics.push_back(mode.get<std::string>());
    }
  }
  return c;
}

}  // namespace tv::cli
