// Traces that differ only in proxy names are canonically equal; a changed program is not.
#include <gtest/gtest.h>

#include <map>

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

// A walk side by side tells renamed traces (equal texts) and a name that pairs otherwise where it
// is printed (different texts) without printing them; what it cannot tell it leaves to the texts.
TEST(Canonical, MatchUpToNamesAgreesWithTheText) {
  auto agrees = [](const Trace& x, const Trace& y) {
    const NameMatch m = match_up_to_names(x, y);
    if (m == NameMatch::renamed) EXPECT_EQ(canonical_text(x), canonical_text(y));
    if (m == NameMatch::different) EXPECT_NE(canonical_text(x), canonical_text(y));
    return m;
  };
  const auto files = tv::testing::all_fixture_files();
  std::vector<TracePtr> traces;
  size_t renamed = 0;
  for (const auto& path : files) {
    if (tv::testing::is_python_print(path)) continue;
    SCOPED_TRACE(path.filename().string());
    auto t = parse(tv::testing::read_file(path.string()));
    ASSERT_TRUE(t);
    renamed += agrees(*t, *canonical(*t)) == NameMatch::renamed;
    traces.push_back(t);
  }
  EXPECT_GT(renamed, traces.size() / 2);  // the others name one proxy with two types (a subsymbol's)
  for (size_t i = 0; i + 1 < traces.size(); ++i) agrees(*traces[i], *traces[i + 1]);

  const std::string text = tv::testing::read_file(std::string(TV_FIXTURES_DIR) + "/linear__bwd__00.txt");
  auto a = parse(text);
  auto other_names = parse(rename_all(rename_all(text, "t19", "u19"), "t17", "zz"));
  ASSERT_TRUE(a && other_names);
  EXPECT_EQ(agrees(*a, *other_names), NameMatch::renamed);
  EXPECT_EQ(agrees(*other_names, *a), NameMatch::renamed);
  EXPECT_EQ(agrees(*a, *a), NameMatch::renamed);

  // One proxy of the renamed copy with another type: it prints otherwise, and the walk does not say
  // renamed.
  auto retyped = std::make_shared<Trace>(*other_names);
  for (auto& b : retyped->body)
    if (!b.outputs.empty() && b.outputs[0]->is_tensor()) {
      Proxy p = *b.outputs[0];
      p.shape.push_back(3);
      b.outputs[0] = std::make_shared<const Proxy>(p);
      break;
    }
  EXPECT_NE(agrees(*a, *retyped), NameMatch::renamed);
  EXPECT_NE(canonical_text(*a), canonical_text(*retyped));

  // Two names made one (t17 takes t19's name): a printed name pairs otherwise.
  auto merged = parse(rename_all(text, "t17", "t19"));
  ASSERT_TRUE(merged);
  EXPECT_EQ(agrees(*a, *merged), NameMatch::different);
  EXPECT_EQ(agrees(*merged, *a), NameMatch::different);
  EXPECT_FALSE(canonically_equal(*a, *merged));
}

// Statements changed one at a time (an argument that reads another value, an output under a new
// name that its readers do not use): whatever the walk says of each change, the texts say too.
TEST(Canonical, MatchUpToNamesAgreesWithTheTextOnChangedStatements) {
  std::map<NameMatch, size_t> told;
  auto agrees = [&](const Trace& x, const Trace& y) {
    const NameMatch m = match_up_to_names(x, y);
    ++told[m];
    if (m == NameMatch::renamed) EXPECT_EQ(canonical_text(x), canonical_text(y));
    if (m == NameMatch::different) EXPECT_NE(canonical_text(x), canonical_text(y));
  };
  for (const auto& path : tv::testing::all_fixture_files()) {
    if (tv::testing::is_python_print(path)) continue;
    SCOPED_TRACE(path.filename().string());
    auto t = parse(tv::testing::read_file(path.string()));
    ASSERT_TRUE(t);
    ProxyPtr earlier;  // an output of an earlier statement
    for (size_t i = 0; i < std::min<size_t>(t->body.size(), 24); ++i) {
      const BoundSymbol& b = t->body[i];
      for (size_t k = 0; k < b.args.size() && earlier; ++k)
        if (b.args[k].is_proxy() && b.args[k].proxy != earlier) {
          auto other = std::make_shared<Trace>(*t);
          other->body[i].args[k] = Value::of(earlier);
          agrees(*t, *other);
          break;
        }
      for (size_t k = 0; k < b.outputs.size(); ++k) {
        auto other = std::make_shared<Trace>(*t);
        other->body[i].outputs[k] = renamed(*b.outputs[k], "fresh_" + std::to_string(k));
        agrees(*t, *other);
      }
      if (!b.outputs.empty()) earlier = b.outputs.back();
    }
  }
  EXPECT_GT(told[NameMatch::different], 0u);
}
