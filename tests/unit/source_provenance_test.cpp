// Source provenance: each statement knows the source line it came from — in Thunder's printouts
// (their headers), in the zoo's traces at every stage (the model definition's line, carried through
// decompositions, passes and fusion), and in the backward (the line of the forward statement whose
// gradient rule made it).
#include <gtest/gtest.h>

#include <set>

#include "format/parser.h"
#include "format/printer.h"
#include "session/run.h"
#include "test_util.h"
#include "transforms/gradient_links.h"
#include "transforms/source_provenance.h"

using namespace tv;

namespace {

TracePtr cpu_fixture(const std::string& name) {
  auto r = parse_trace(tv::testing::read_file(std::string(TV_CPU_FIXTURES_DIR) + "/" + name));
  EXPECT_TRUE(r) << name << ": " << (r.error ? r.error->message : "");
  return r.trace;
}

const BoundSymbol* defining(const Trace& t, const std::string& output) {
  for (const auto& b : t.body)
    if (b.output() && b.output()->name == output) return &b;
  return nullptr;
}

std::string where(const SourceRef& s) {
  if (!s) return "none";
  auto l = source_line(*s);
  return l ? l->file + ":" + std::to_string(l->line) : "unparsed: " + *s;
}

Capture mlp_capture(std::vector<std::string> order) {
  RunRequest r;
  r.model = "mlp";
  r.replay = false;
  PipelineSpec spec;
  spec.order = std::move(order);
  r.pipelines.push_back(spec);
  return run_pipelines(r);
}

}  // namespace

TEST(SourceLocation, SplitsThunderHeaders) {
  auto l = source_line("/home/user/models/blocks.py:90: \t        x = F.max_pool2d(F.relu(s.bn(s.c1(x))), 2)");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->file, "/home/user/models/blocks.py");
  EXPECT_EQ(l->line, 90);
  EXPECT_EQ(l->code, "        x = F.max_pool2d(F.relu(s.bn(s.c1(x))), 2)");
  auto bare = source_line("engine/jit/zoo.cpp:181");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->file, "engine/jit/zoo.cpp");
  EXPECT_EQ(bare->line, 181);
  EXPECT_EQ(bare->code, "");
  EXPECT_TRUE(bare->same_line(*source_line("engine/jit/zoo.cpp:181: \tother text")));
  EXPECT_FALSE(source_line("a free comment: no line here"));
  EXPECT_FALSE(source_line(":12: no file"));
  EXPECT_FALSE(source_line("file.py:12x"));
  EXPECT_FALSE(source_line("file.py:99999999999: more digits than a line number has"));
}

// Thunder prints a header when the line changes: the statements under it came from that line.
TEST(SourceLocation, PrintoutsImplyEveryStatementsLine) {
  auto t = cpu_fixture("convnet__fwd__00.txt");
  ASSERT_TRUE(t);
  auto sources = statement_sources(*t, nullptr);
  std::map<const BoundSymbol*, SourceRef> of;
  size_t i = 0;
  walk(t->body, [&](const BoundSymbol& b, int) { of[&b] = sources[i++]; });
  EXPECT_EQ(where(of[defining(*t, "t59")]), "/usr/lib/python3/dist-packages/torch/nn/modules/batchnorm.py:193");
  EXPECT_EQ(where(of[defining(*t, "t61")]), "/home/user/models/blocks.py:90");
  EXPECT_EQ(where(of[defining(*t, "t77")]), "/home/user/models/blocks.py:90");  // no header of its own
  EXPECT_EQ(where(of[defining(*t, "t96")]), "/home/user/models/blocks.py:92");
  for (const auto& b : t->body)
    if (is_structural(b)) EXPECT_EQ(of[&b], nullptr) << print_statement(b);
  auto line = source_line("/home/user/models/blocks.py:90");
  auto from = statements_from(*t, *line, nullptr);
  std::vector<std::string> names;  // the top-level ones; their decompositions come with them
  for (const auto* b : from)
    for (const auto& top : t->body)
      if (b == &top) names.push_back(b->name());
  EXPECT_EQ(names, (std::vector<std::string>{"ltorch.relu", "ltorch.max_pool2d"}));
  EXPECT_GT(from.size(), names.size());
  // A printout's backward has no headers and no links: nothing to say, and nothing made up.
  auto bwd = cpu_fixture("convnet__bwd__00.txt");
  ASSERT_TRUE(bwd);
  for (const auto& s : statement_sources(*bwd, t.get())) EXPECT_EQ(s, nullptr);
}

// The zoo's traces name the model definition's line at every stage, fusion regions' members
// included; the backward's statements have the line of the forward statement they came from.
TEST(SourceProvenance, ZooStatementsAndTheirGradientsNameTheModelDefinition) {
  Capture c = mlp_capture({"jit"});
  ASSERT_EQ(c.pipelines.size(), 1u);
  const auto& stages = c.pipelines[0].stages;
  ASSERT_FALSE(stages.forward.empty());
  ASSERT_FALSE(stages.backward.empty());
  const Trace& forward = *stages.forward.back().trace;
  std::set<int> zoo_lines;
  for (const auto& st : stages.forward) {
    auto sources = statement_sources(*st.trace, nullptr);
    size_t i = 0;
    walk(st.trace->body, [&](const BoundSymbol& b, int depth) {
      const SourceRef& s = sources[i++];
      if (is_structural(b)) return;
      ASSERT_NE(s, nullptr) << st.pass << ": " << print_statement(b);
      auto l = source_line(*s);
      ASSERT_TRUE(l) << *s;
      EXPECT_EQ(l->file, "engine/jit/zoo.cpp") << st.pass;
      zoo_lines.insert(l->line);
    });
  }
  EXPECT_EQ(zoo_lines.size(), 3u);  // fc1, gelu, fc2
  bool fused = false;
  for (const auto& b : forward.body) fused = fused || b.symbol->has(Trait::fusion);
  EXPECT_TRUE(fused) << "the last forward stage of mlp under jit has a fusion region";
  // fc2's line: its forward statement, and in every backward stage the matmuls of its gradients.
  const BoundSymbol* fc2 = nullptr;
  walk(forward.body, [&](const BoundSymbol& b, int) {
    if (b.name() == "ltorch.linear") fc2 = &b;
  });
  ASSERT_NE(fc2, nullptr);
  auto fc2_line = *source_line(*statement_source(forward, *fc2, nullptr));
  for (const auto& st : stages.backward) {
    auto from = statements_from(*st.trace, fc2_line, &forward);
    EXPECT_FALSE(from.empty()) << st.pass;
    for (const auto* b : from)
      if (!b->gradient_of.empty()) {
        const BoundSymbol* f = forward_statement(forward, b->gradient_of);
        ASSERT_NE(f, nullptr);
        EXPECT_TRUE(source_line(*statement_source(forward, *f, nullptr))->same_line(fc2_line)) << print_statement(*b);
      }
    // Without the forward, the backward's statements have no line: none is made up.
    EXPECT_TRUE(statements_from(*st.trace, fc2_line, nullptr).empty()) << st.pass;
  }
}
