// The stage history: whether a stage changed the program, and stage traces kept as text until read.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

#include "format/parser.h"
#include "format/printer.h"
#include "history/stages.h"
#include "test_util.h"

using namespace tv;

namespace {

TracePtr fixture(const std::string& name) {
  auto r = parse_trace(tv::testing::read_file(std::string(TV_FIXTURES_DIR) + "/" + name));
  EXPECT_TRUE(r) << name;
  return r.trace;
}

}  // namespace

TEST(StageHistory, ChangedIsCanonicalInequality) {
  StageHistory h;
  auto acquired = fixture("linear__bwd__00.txt");
  h.record(TraceKind::backward, "acquisition", acquired, 1.0);
  h.record(TraceKind::backward, "copy", std::make_shared<Trace>(*acquired), 0.5);  // the same objects
  std::string text = tv::testing::read_file(std::string(TV_FIXTURES_DIR) + "/linear__bwd__00.txt");
  for (size_t at = 0; (at = text.find("t19", at)) != std::string::npos;) text.replace(at, 3, "q19");
  h.record(TraceKind::backward, "renamed", parse_trace(text).trace, 0.5);  // other names, same program
  h.record(TraceKind::backward, "ddp", fixture("ddp_jit_then_ddp__bwd__00.txt"), 0.5);
  const auto& stages = h.of(TraceKind::backward);
  ASSERT_EQ(stages.size(), 4u);
  EXPECT_TRUE(stages[0].changed);
  EXPECT_FALSE(stages[1].changed);
  EXPECT_FALSE(stages[2].changed);
  EXPECT_TRUE(stages[3].changed);
  // A stage's time is the pass's and its comparison's.
  EXPECT_GE(stages[1].milliseconds, 0.5);
}

TEST(StageTrace, StoredTextIsParsedOnceOnFirstRead) {
  const std::string text = tv::testing::read_file(std::string(TV_FIXTURES_DIR) + "/linear__fwd__00.txt");
  std::atomic<int> parses{0};
  auto stored = StageTrace::stored(StoredLines::of_text(text), [&](const std::string& t) {
    ++parses;
    return parse_trace(t).trace;
  });
  EXPECT_EQ(parses, 0);
  EXPECT_TRUE(stored);
  ASSERT_TRUE(stored.stored_lines());
  EXPECT_EQ(stored.stored_lines()->text(), text);
  StageTrace copy = stored;
  EXPECT_EQ(print_trace(*stored), text);
  EXPECT_EQ(copy.get(), stored.get());
  EXPECT_EQ(parses, 1);

  int failures = 0;
  auto broken = StageTrace::stored(StoredLines::of_text("not a trace"), [&](const std::string&) -> TracePtr {
    ++failures;
    throw std::runtime_error("does not parse");
  });
  EXPECT_THROW(broken.shared(), std::runtime_error);
  EXPECT_THROW(broken.shared(), std::runtime_error);  // every read
  EXPECT_EQ(failures, 2);

  StageTrace made(fixture("linear__fwd__00.txt"));
  EXPECT_FALSE(made.stored_lines());
  EXPECT_FALSE(StageTrace());
}

TEST(StoredLines, JoinRunsOfASharedTable) {
  for (std::string text : {"", "a", "a\n", "\n\n", "a\nb\n\nc"}) EXPECT_EQ(StoredLines::of_text(text).text(), text);
  StoredLines lines;
  lines.table = std::make_shared<const std::vector<std::string>>(std::vector<std::string>{"x", "y", "z"});
  lines.runs = {{1, 2}, {0, 1}, {2, 1}};
  EXPECT_EQ(lines.text(), "y\nz\nx\nz");
  EXPECT_EQ(StoredLines{}.text(), "");
}
