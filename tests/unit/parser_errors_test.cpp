// The parser never crashes: malformed text gives an error with line and column, and whatever it
// accepts prints back to text that parses to the same print (our own round-trip law).
#include <gtest/gtest.h>

#include <random>

#include "format/parser.h"
#include "format/printer.h"
#include "test_util.h"

using namespace tv;

namespace {

ParseError error_of(const std::string& text) {
  auto r = parse_trace(text);
  EXPECT_FALSE(r) << "expected an error for:\n" << text;
  return r.error.value_or(ParseError{});
}

const char* kSmall =
    "import torch\n\n@torch.no_grad()\ndef computation(x):\n  # x: \"cpu f32[2, 5]\"\n"
    "  t0 = ltorch.neg(x)  # t0: \"cpu f32[2, 5]\"\n  return t0";

// Mutates `text` in one of several ways chosen by `rng`.
std::string mutate(std::string text, std::mt19937& rng) {
  auto pick = [&](size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  const std::string alphabet = "()[]{},:=.#'\"\\ \n\t-+*0123456789abcxyz_";
  int edits = 1 + static_cast<int>(pick(4));
  for (int e = 0; e < edits && !text.empty(); ++e) {
    size_t at = pick(text.size());
    switch (pick(7)) {
      case 0: text.erase(at, 1 + pick(8)); break;
      case 1: text.insert(at, 1, alphabet[pick(alphabet.size())]); break;
      case 2: text[at] = alphabet[pick(alphabet.size())]; break;
      case 3: text.resize(at); break;
      case 4: text.insert(at, text.substr(pick(text.size()), 1 + pick(40))); break;
      case 5: text[at] = static_cast<char>(pick(256)); break;
      case 6: {  // swap two lines
        auto a = text.rfind('\n', at), b = text.find('\n', at + 1);
        if (a != std::string::npos && b != std::string::npos) std::swap(text[a + 1], text[b - 1]);
        break;
      }
    }
  }
  return text;
}

}  // namespace

TEST(ParserErrors, PointsAtLineAndColumn) {
  auto e = error_of("import torch\n\ndef computation(x):\n  t0 = ltorch.neg(x  # t0: \"cpu f32[2]\"");
  EXPECT_EQ(e.line, 4);
  EXPECT_GT(e.column, 1);
  EXPECT_NE(e.message.find("')'"), std::string::npos) << e.message;
  EXPECT_EQ(e.describe("f.txt").rfind("f.txt:4:", 0), 0u);

  e = error_of("import torch\n\ndef computation(x):\n  # x: \"cpu f99[2]\"");
  EXPECT_EQ(e.line, 4);
  EXPECT_NE(e.message.find("unknown dtype 'f99'"), std::string::npos) << e.message;

  e = error_of("import torch\nhello\n");
  EXPECT_EQ(e.line, 2);
  e = error_of("");
  EXPECT_NE(e.message.find("def"), std::string::npos);
  e = error_of("def f(x):\n      # t0 = prims.neg(x)");
  EXPECT_EQ(e.line, 2);
  e = error_of("def f(x):\n  t0 = prims.neg('x)");
  EXPECT_NE(e.message.find("unterminated string"), std::string::npos);
}

// A name read that nothing defines (a deleted line, a typo, a return of a name never computed) is
// refused where it is read; what real printouts read without defining loads: the names import
// lines bind and Thunder's context objects (`_DistributedReduceOps_SUM_0`).
TEST(ParserErrors, ANameNeverDefinedIsRefusedWhereItIsRead) {
  auto e = error_of("def f(x):\n  t0 = ltorch.neg(x)\n  t1 = ltorch.add(t0, y)\n  return t1");
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.column, 23);
  EXPECT_NE(e.message.find("'y' is read but never defined"), std::string::npos) << e.message;
  e = error_of("def f(x):\n  t0 = ltorch.neg(x)\n  return (t99,)");
  EXPECT_EQ(e.line, 3);
  EXPECT_NE(e.message.find("'t99' is read but never defined"), std::string::npos) << e.message;

  EXPECT_TRUE(parse_trace("from thunder.torch import scale\ndef f(x):\n  t0 = ltorch.mul(x, scale)\n  return t0"));
  EXPECT_TRUE(parse_trace("import numpy as np\ndef f(x):\n  t0 = ltorch.mul(x, np)\n  return t0"));
  EXPECT_TRUE(parse_trace("def f(x):\n  t0 = ltorch.all_reduce(x, _DistributedReduceOps_SUM_0)\n  return t0"));
}

TEST(ParserErrors, ControlBytesOfTheInputAreEscapedInMessages) {
  auto e = error_of("import torch\n\ndef computation(x):\n  # x: \"cpu \x1b[31mf32[2]\"");
  EXPECT_EQ(e.message.find('\x1b'), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("\\x1b"), std::string::npos) << e.message;
}

TEST(ParserErrors, AnIntTypeBeyondWhatADoubleHoldsIsRefused) {
  // Such a value would reprint as another number (and converting it to int64 is undefined).
  for (const char* v : {"644444444444444444444444444444444444444444444444444444444", "9007199254740993", "2.5"}) {
    auto e = error_of(std::string("import torch\n\ndef f(n):\n  # n: \"int ") + v + "\"\n  return n");
    EXPECT_NE(e.message.find("not a whole number"), std::string::npos) << v << ": " << e.message;
  }
  EXPECT_TRUE(parse_trace("import torch\n\ndef f(n):\n  # n: \"int 9007199254740992\"\n  return n"));
}

TEST(ParserErrors, UnknownSymbolsBecomeOpaque) {
  auto r = parse_trace("def f(x):\n  t0 = my.custom_op(x, 3, k=[1, 2])  # t0: \"cpu f32[1]\"\n  return t0");
  ASSERT_TRUE(r) << r.error->message;
  EXPECT_TRUE(r.trace->body[0].symbol->opaque);
  EXPECT_EQ(r.trace->body[0].name(), "my.custom_op");
  EXPECT_EQ(print_trace(*r.trace), "\ndef f(x):\n  t0 = my.custom_op(x, 3, k=[1, 2])  # t0: \"cpu f32[1]\"\n  return t0");
}

TEST(ParserErrors, OwnOutputRoundTrips) {
  auto r = parse_trace(kSmall);
  ASSERT_TRUE(r);
  auto once = print_trace(*r.trace);
  EXPECT_EQ(once, kSmall);
  auto again = parse_trace(once);
  ASSERT_TRUE(again);
  EXPECT_EQ(print_trace(*again.trace), once);
}

TEST(ParserErrors, TenThousandMutatedFixturesNeverCrash) {
  auto files = tv::testing::all_fixture_files();
  std::vector<std::string> texts;
  for (const auto& f : files) texts.push_back(tv::testing::read_file(f));
  std::mt19937 rng(20261129);
  int parsed = 0, rejected = 0;
  for (int i = 0; i < 10000; ++i) {
    auto text = mutate(texts[i % texts.size()], rng);
    auto r = parse_trace(text);
    if (!r) {
      ++rejected;
      ASSERT_GE(r.error->line, 1) << text;
      ASSERT_GE(r.error->column, 1) << text;
      ASSERT_FALSE(r.error->message.empty());
      continue;
    }
    ++parsed;
    // Whatever parses must obey the round-trip law on our own output.
    auto printed = print_trace(*r.trace);
    auto back = parse_trace(printed);
    ASSERT_TRUE(back) << back.error->describe("reprint") << "\n--- reprint of mutated input:\n" << printed;
    ASSERT_EQ(print_trace(*back.trace), printed) << "mutated input:\n" << text;
  }
  EXPECT_GT(rejected, 1000);
  EXPECT_GT(parsed, 100);
}
