#include "gui/import_dir.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "format/parser.h"

namespace tv::gui {
namespace {

struct Entry {
  TraceKind kind;
  int index;
  std::filesystem::path path;
};

bool kind_of(const std::string& text, TraceKind* out) {
  if (text == "fwd") return *out = TraceKind::forward, true;
  if (text == "bwd") return *out = TraceKind::backward, true;
  return parse_trace_kind(text, out);
}

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Capture import_thunder_dir(const std::string& folder) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(folder)) throw std::runtime_error(folder + ": not a folder of Thunder printouts");
  std::map<std::string, std::vector<Entry>> cases;
  for (const auto& file : fs::directory_iterator(folder)) {
    std::string name = file.path().filename().string();
    if (!name.ends_with(".txt") || name.ends_with(".python.txt")) continue;
    std::string stem = name.substr(0, name.size() - 4);
    auto a = stem.find("__"), b = stem.rfind("__");
    if (a == std::string::npos || a == b) continue;
    TraceKind kind;
    if (!kind_of(stem.substr(a + 2, b - a - 2), &kind)) continue;
    int index = std::atoi(stem.substr(b + 2).c_str());
    cases[stem.substr(0, a)].push_back({kind, index, file.path()});
  }
  if (cases.empty())
    throw std::runtime_error(folder + ": no files named <case>__<kind>__<index>.txt (kind prologue, fwd, bwd, epilogue)");

  Capture capture;
  capture.tool_version = "0.1.0";
  capture.model.name = "imported";
  capture.model.params["folder"] = folder;
  for (auto& [name, entries] : cases) {
    std::sort(entries.begin(), entries.end(), [](const Entry& x, const Entry& y) {
      return x.kind != y.kind ? x.kind < y.kind : x.index < y.index;
    });
    PipelineRecord record;
    record.spec.order = {name};
    for (const auto& e : entries) {
      auto parsed = parse_trace(read_all(e.path));
      if (!parsed) {
        record.error += parsed.error->describe(e.path.string()) + "\n";
        continue;
      }
      const auto& prov = parsed.trace->provenance;
      std::string pass = prov ? prov->pass : "acquisition";
      double ms = prov && prov->milliseconds ? static_cast<double>(*prov->milliseconds) : 0.0;
      record.stages.record(e.kind, pass, parsed.trace, ms);
    }
    capture.pipelines.push_back(std::move(record));
  }
  return capture;
}

}  // namespace tv::gui
