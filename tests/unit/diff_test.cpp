// The trace diff aligns statements, tells renames from changes, and finds DDP's extra statements.
#include <gtest/gtest.h>

#include "diff/aligned.h"
#include "diff/diff.h"
#include "format/parser.h"
#include "ops/ltorch.h"
#include "test_util.h"

using namespace tv;

namespace {
TracePtr fixture(const std::string& name) {
  auto r = parse_trace(tv::testing::read_file(std::string(TV_FIXTURES_DIR) + "/" + name));
  EXPECT_TRUE(r);
  return r.trace;
}
}  // namespace

TEST(Diff, RenamesAreNotChanges) {
  // Thunder's plain and DDP computations name the output differently (t3 vs t5): same program.
  auto d = diff_traces(*fixture("linear__fwd__00.txt"), *fixture("ddp_jit_then_ddp__fwd__00.txt"));
  EXPECT_TRUE(d.same_program);
  EXPECT_EQ(d.count(DiffKind::changed), 0);
  EXPECT_EQ(d.count(DiffKind::added), 0);
  EXPECT_GE(d.count(DiffKind::renamed), 1);
  // The rename map behind "same program": which name became which (the parameters keep theirs).
  EXPECT_EQ(d.renames, (std::vector<std::pair<std::string, std::string>>{{"t3", "t5"}}));
  EXPECT_TRUE(diff_traces(*fixture("linear__fwd__00.txt"), *fixture("linear__fwd__00.txt")).renames.empty());
}

TEST(Diff, DdpBackwardAddsDivideAndAllReduce) {
  auto d = diff_traces(*fixture("linear__bwd__00.txt"), *fixture("ddp_jit_then_ddp__bwd__00.txt"));
  EXPECT_FALSE(d.same_program);
  std::vector<std::string> added;
  for (const auto& r : d.statements)
    if (r.kind == DiffKind::added) added.push_back(r.right_text);
  ASSERT_GE(added.size(), 3u);
  auto has = [&](const std::string& s) {
    for (const auto& a : added)
      if (a.find(s) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("torch.true_divide"));
  EXPECT_TRUE(has("torch_all_reduce_prim_impl"));
  EXPECT_TRUE(has("torch_wait_prim_impl"));
  auto text = unified_text(d);
  EXPECT_NE(text.find("+   ft25 = torch_all_reduce_prim_impl"), std::string::npos) << text;
  // The matmul is the same computation under other names; the return now gives the reduced grad.
  EXPECT_NE(text.find("=   t24 = torch.matmul(t23, t28)"), std::string::npos) << text;
  EXPECT_NE(text.find("+   return (None, t26)"), std::string::npos) << text;
  EXPECT_FALSE(d.lines.empty());
}

TEST(Diff, IdenticalTracesAreAllSame) {
  auto t = fixture("mlp__bwd__00.txt");
  auto d = diff_traces(*t, *t);
  EXPECT_TRUE(d.same_text);
  EXPECT_TRUE(d.same_program);
  EXPECT_EQ(d.count(DiffKind::same), static_cast<int>(t->body.size()));
}

// Within a run of removed and added statements only statements of one symbol pair up as "changed";
// the rest read as removed and added (a bucketing stage's 160 removed and 164 added statements are
// not "160 changed").
TEST(Diff, OnlyStatementsOfOneSymbolPairAsChanged) {
  auto build = [](bool right) {
    TraceBuilder b;
    auto x = b.input(make_tensor("x", {2, 3}, DType::f32, Device{}));
    auto y = b.input(make_tensor("y", {2, 3}, DType::f32, Device{}));
    auto t = ltorch::add(b, Value::of(x), Value::of(y));
    if (right) {
      t = ltorch::tanh(b, ltorch::sub(b, Value::of(t), Value::of(y)));
      t = ltorch::neg(b, t);
    } else {
      t = ltorch::mul(b, Value::of(t), Value::of(x));
    }
    return b.finish(Value::of(ltorch::exp(b, t)));
  };
  auto d = diff_traces(*build(false), *build(true));
  EXPECT_FALSE(d.same_program);
  EXPECT_EQ(d.count(DiffKind::removed), 1) << unified_text(d);
  EXPECT_EQ(d.count(DiffKind::added), 3) << unified_text(d);
  for (const auto& r : d.statements)
    if (r.kind == DiffKind::changed) {
      auto symbol = [](const std::string& text) { return text.substr(text.find('=') + 1, text.find('(') - text.find('=')); };
      EXPECT_EQ(symbol(r.left_text), symbol(r.right_text)) << r.left_text << " | " << r.right_text;
    }
}

TEST(Diff, PipelinesAlignOnTheBaseStatements) {
  // Thunder's linear backward as the base; the ddp backward adds the divide and the all-reduce, the
  // base itself is the same everywhere.
  auto base = fixture("linear__bwd__00.txt");
  auto ddp = fixture("ddp_jit_then_ddp__bwd__00.txt");
  auto a = align_traces(*base, {base.get(), ddp.get()});
  ASSERT_EQ(a.pairs.size(), 2u);
  // Every base statement is on exactly one row, in order.
  std::vector<int> bases;
  for (const auto& row : a.rows)
    if (row.base >= 0) bases.push_back(row.base);
  ASSERT_EQ(bases.size(), base->body.size());
  for (size_t i = 0; i < bases.size(); ++i) EXPECT_EQ(bases[i], static_cast<int>(i));
  // Column 0 (the base against itself) is the same on every base row and has nothing elsewhere.
  for (const auto& row : a.rows) {
    ASSERT_EQ(row.cells.size(), 2u);
    if (row.base >= 0) {
      ASSERT_TRUE(row.cells[0]);
      EXPECT_EQ(row.cells[0]->kind, DiffKind::same);
      EXPECT_EQ(row.cells[0]->left_text, row.base_text);
    } else {
      EXPECT_FALSE(row.cells[0]);
    }
  }
  // Column 1 holds every statement of the ddp trace once, in its order, each added one on a row
  // with no base statement.
  std::vector<int> rights;
  int added = 0;
  for (const auto& row : a.rows) {
    const auto& c = row.cells[1];
    if (!c || c->right < 0) continue;
    rights.push_back(c->right);
    if (c->kind == DiffKind::added) {
      ++added;
      EXPECT_EQ(row.base, -1);
    }
  }
  ASSERT_EQ(rights.size(), ddp->body.size());
  for (size_t i = 0; i < rights.size(); ++i) EXPECT_EQ(rights[i], static_cast<int>(i));
  EXPECT_EQ(added, a.pairs[1].count(DiffKind::added));
  EXPECT_GE(added, 3);
  EXPECT_TRUE(align_traces(*base, {}).rows.empty());
}
