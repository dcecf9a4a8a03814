// The trace diff aligns statements, tells renames from changes, and finds DDP's extra statements.
#include <gtest/gtest.h>

#include "diff/diff.h"
#include "format/parser.h"
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
