// The trace view's text (gui/trace_text.h) without a window: every real Thunder printout of the
// fixtures, at every depth, highlights exactly the proxies its lines name, although a line's
// proxies are met only when the line is first lexed.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "format/parser.h"
#include "gui/trace_text.h"

namespace {

namespace fs = std::filesystem;
using tv::gui::Token;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<fs::path> fixture_traces() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(TV_FIXTURES_DIR))
    if (e.path().extension() == ".txt" && e.path().filename().string().find(".python.") == std::string::npos)
      out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The names of the proxies a statement defines and reads.
std::set<std::string> own_proxy_names(const tv::BoundSymbol& b) {
  std::set<std::string> names;
  for (const auto& o : b.outputs) names.insert(o->name);
  for (const auto& p : b.inputs()) names.insert(p->name);
  for (const auto& [k, v] : b.kwargs) tv::for_each_proxy(v, [&](const tv::ProxyPtr& p) { names.insert(p->name); });
  return names;
}

TEST(TraceText, LinesNameTheProxiesTheirStatementsDefineAndRead) {
  auto files = fixture_traces();
  ASSERT_GT(files.size(), 20u);
  size_t proxy_spans = 0;
  for (const auto& file : files) {
    auto parsed = tv::parse_trace(read(file));
    ASSERT_TRUE(parsed) << file;
    const tv::Trace& trace = *parsed.trace;
    std::set<std::string> params;
    for (const auto& p : trace.params) params.insert(p.proxy->name);
    for (int depth = 0; depth <= std::min(2, tv::gui::max_subsymbol_depth(trace)); ++depth) {
      auto text = tv::gui::build_trace_text(trace, depth);
      for (size_t l = 0; l < text.line_count(); ++l) {
        const auto line = text.line(l);
        const tv::BoundSymbol* owner = text.line_owner[l];
        // A statement's line: its own proxies; a line of no statement (the signature): the parameters.
        const auto expected = owner ? own_proxy_names(*owner) : params;
        for (const auto& span : text.spans(l)) {
          const std::string word(line.substr(span.begin, span.length));
          if (span.token == Token::proxy) {
            ++proxy_spans;
            ASSERT_GE(span.proxy, 0);
            EXPECT_EQ(text.proxies[span.proxy]->name, word) << file << " line " << l;
          } else if (span.token == Token::plain && line.substr(span.begin + span.length, 1) != "=") {
            EXPECT_FALSE(expected.count(word)) << file << " depth " << depth << " line " << l << ": '" << word
                                               << "' is a proxy of the line, not marked: " << line;
          }
        }
      }
    }
  }
  EXPECT_GT(proxy_spans, 1000u);
}

TEST(TraceText, ProxiesAreFoundByNameBeforeTheirLinesAreLexed) {
  auto parsed = tv::parse_trace(read(fs::path(TV_FIXTURES_DIR) / "mlp__bwd__00.txt"));
  ASSERT_TRUE(parsed);
  const tv::Trace& trace = *parsed.trace;
  auto text = tv::gui::build_trace_text(trace, 0);
  size_t defining = trace.body.size() - 1;  // the last statement that defines a proxy
  while (trace.body.at(defining).outputs.empty()) --defining;
  const std::string last = trace.body[defining].output()->name;
  const int p = text.proxy_named(last);
  ASSERT_GE(p, 0);
  EXPECT_EQ(text.proxies[p]->name, last);
  const auto& uses = text.use_lines(p);
  ASSERT_FALSE(uses.empty());
  EXPECT_EQ(text.definition_line(p), uses.front());
  EXPECT_EQ(text.line_owner[uses.front()], &trace.body[defining]);
  EXPECT_EQ(text.proxy_named("no_such_proxy"), -1);
  EXPECT_EQ(text.proxy_named(trace.params.at(0).proxy->name), 0);  // parameters come first
}

// Tabs to the next multiple of 4 columns, one character at a time.
std::string tabs_expanded_one_by_one(const std::string& text) {
  std::string out;
  size_t column = 0;
  for (char c : text) {
    if (c == '\t') {
      out.append(4 - column % 4, ' ');
      column += 4 - column % 4;
    } else {
      out += c;
      column = c == '\n' ? 0 : column + 1;
    }
  }
  return out;
}

TEST(TraceText, TabsExpandAsOneByOne) {
  std::mt19937 random(20261203);
  const char alphabet[] = "ab\t\n ";
  for (int n = 0; n < 100000; ++n) {
    std::string text(random() % 40, ' ');
    for (char& c : text) c = alphabet[random() % 5];
    ASSERT_EQ(tv::gui::expand_tabs(text), tabs_expanded_one_by_one(text)) << "case " << n;
  }
}

}  // namespace
