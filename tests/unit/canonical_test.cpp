// Traces that differ only in proxy names are canonically equal; a changed program is not.
#include <gtest/gtest.h>

#include "canonical/canonical.h"
#include "format/parser.h"
#include "test_util.h"

using namespace tv;

namespace {

TracePtr parse(const std::string& text) {
  auto r = parse_trace(text);
  EXPECT_TRUE(r) << (r.error ? r.error->message : "");
  return r.trace;
}

std::string rename_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) text.replace(at, from.size(), to);
  return text;
}

}  // namespace

TEST(Canonical, RenamedTracesAreEqual) {
  std::string a = tv::testing::read_file(std::string(TV_FIXTURES_DIR) + "/linear__bwd__00.txt");
  // The DDP backward names the same values differently (t5 -> t13, ...): rename ours by hand.
  std::string b = rename_all(rename_all(rename_all(a, "t19", "u19"), "t17", "zz"), "input", "x_in");
  auto ta = parse(a), tb = parse(b);
  ASSERT_TRUE(ta && tb);
  EXPECT_NE(a, b);
  EXPECT_TRUE(canonically_equal(*ta, *tb));
  EXPECT_EQ(canonical_hash(*ta), canonical_hash(*tb));
}

TEST(Canonical, HeadersAndProvenanceAreNotTheProgram) {
  auto a = parse(tv::testing::read_file(std::string(TV_FIXTURES_DIR) + "/linear__fwd__00.txt"));
  auto b = parse(tv::testing::read_file(std::string(TV_FIXTURES_DIR) + "/ddp_jit_then_ddp__fwd__00.txt"));
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(canonically_equal(*a, *b));
}

TEST(Canonical, DifferentProgramsDiffer) {
  auto a = parse(tv::testing::read_file(std::string(TV_FIXTURES_DIR) + "/linear__bwd__00.txt"));
  auto b = parse(tv::testing::read_file(std::string(TV_FIXTURES_DIR) + "/ddp_jit_then_ddp__bwd__00.txt"));
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(canonically_equal(*a, *b));  // the DDP backward divides and all-reduces
  EXPECT_NE(canonical_hash(*a), canonical_hash(*b));
  auto c = parse(rename_all(tv::testing::read_file(std::string(TV_FIXTURES_DIR) + "/linear__bwd__00.txt"),
                            "(1, 0)", "(0, 1)"));
  EXPECT_FALSE(canonically_equal(*a, *c));
}

TEST(Canonical, NamesFollowDefinitionOrder) {
  auto t = parse("def f(a, b):\n  # a: \"cpu f32[2]\"\n  # b: \"cpu f32[2]\"\n"
                 "  z = prims.add(b, a)  # z: \"cpu f32[2]\"\n  return z");
  ASSERT_TRUE(t);
  auto c = canonical(*t);
  EXPECT_EQ(c->params[0].proxy->name, "p0");
  EXPECT_EQ(c->params[1].proxy->name, "p1");
  EXPECT_EQ(c->body[2].output()->name, "p2");
  EXPECT_EQ(c->body[2].args[0].proxy->name, "p1");
}

// The quick checks in front of the canonical text agree with it: a different shape is a different
// program, the same objects the same program; every other case goes to the text.
TEST(Canonical, ShapeAndIdentityAgreeWithTheText) {
  const std::string text = tv::testing::read_file(std::string(TV_FIXTURES_DIR) + "/linear__bwd__00.txt");
  auto a = parse(text);
  auto renamed = parse(rename_all(rename_all(text, "t19", "u19"), "t17", "zz"));
  auto other_axes = parse(rename_all(text, "(1, 0)", "(0, 1)"));  // same symbols, other literals
  auto ddp = parse(tv::testing::read_file(std::string(TV_FIXTURES_DIR) + "/ddp_jit_then_ddp__bwd__00.txt"));
  ASSERT_TRUE(a && renamed && other_axes && ddp);

  EXPECT_TRUE(same_shape(*a, *renamed));
  EXPECT_FALSE(same_objects(*a, *renamed));  // other proxies
  EXPECT_TRUE(canonically_equal(*a, *renamed));

  EXPECT_FALSE(same_shape(*a, *other_axes));  // an integer argument differs
  EXPECT_FALSE(canonically_equal(*a, *other_axes));
  EXPECT_FALSE(same_shape(*a, *ddp));
  EXPECT_FALSE(canonically_equal(*a, *ddp));

  // A copy (what a pass that changed nothing returns) is the same objects: equal without a text.
  auto copy = std::make_shared<Trace>(*a);
  copy->provenance.reset();
  EXPECT_TRUE(same_objects(*a, *copy));
  EXPECT_TRUE(canonically_equal(*a, *copy));
  // Changing one statement of the copy leaves the original and its shared subsymbols as they were.
  const std::string before = canonical_text(*a);
  for (auto& b : copy->body)
    if (!b.subsymbols.empty()) {
      b.subsymbols.clear();
      break;
    }
  EXPECT_FALSE(same_shape(*a, *copy));
  EXPECT_EQ(canonical_text(*a), before);
}
