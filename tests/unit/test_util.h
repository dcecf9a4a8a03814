// Small helpers shared by the unit tests.
#pragma once
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tv::testing {

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The printouts of one fixture folder, sorted: tests/fixtures/thunder by default.
inline std::vector<std::filesystem::path> fixture_files(const std::filesystem::path& dir = TV_FIXTURES_DIR) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".txt") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The printouts of both fixture folders (GPU runs, then the CPU model blocks).
inline std::vector<std::filesystem::path> all_fixture_files() {
  auto out = fixture_files(TV_FIXTURES_DIR);
  auto cpu = fixture_files(TV_CPU_FIXTURES_DIR);
  out.insert(out.end(), cpu.begin(), cpu.end());
  return out;
}

inline bool is_python_print(const std::filesystem::path& p) {
  return p.filename().string().find(".python.txt") != std::string::npos;
}

}  // namespace tv::testing
