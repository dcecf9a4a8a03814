// Every real Thunder printout parses, reprints to the same text, and what the parser read matches.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "format/parser.h"
#include "format/printer.h"

namespace fs = std::filesystem;
using namespace tv;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<fs::path> fixtures() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(TV_FIXTURES_DIR))
    if (e.path().extension() == ".txt") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(Fixtures, EveryFixtureParsesAndReprintsIdentically) {
  auto files = fixtures();
  ASSERT_GE(files.size(), 70u);
  for (const auto& f : files) {
    auto text = read(f);
    auto r = parse_trace(text);
    ASSERT_TRUE(r) << r.error->describe(f.string());
    bool python = f.string().find(".python.txt") != std::string::npos;
    PrintOptions options;
    if (python) options.depth = 0;
    EXPECT_EQ(print_trace(*r.trace, options), text) << f;
  }
}
