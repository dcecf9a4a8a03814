// The IR's own types: copies of a bound symbol that share their lists until changed, and the names a
// trace builder hands out around reserved ones.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "ir/builder.h"
#include "ir/name_table.h"
#include "ir/trace.h"
#include "ops/ltorch.h"
#include "passes/dce.h"

using namespace tv;

TEST(CowVector, ChangesCopyOnlyTheChangedSide) {
  CowVector<int> a{1, 2, 3};
  CowVector<int> b = a;
  EXPECT_TRUE(a.shares_with(b));
  EXPECT_EQ(a, b);
  b.push_back(9);
  EXPECT_FALSE(a.shares_with(b));
  EXPECT_EQ(a.vec(), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(b.vec(), (std::vector<int>{1, 2, 3, 9}));
  EXPECT_NE(a, b);
  CowVector<int> c = b;
  c[0] = 5;
  EXPECT_EQ(c.vec(), (std::vector<int>{5, 2, 3, 9}));
  EXPECT_EQ(b.vec(), (std::vector<int>{1, 2, 3, 9}));
  EXPECT_EQ(a, (CowVector<int>{1, 2, 3}));  // equal contents in other buffers
}

TEST(CowVector, CopiesMadeAndDroppedOnSeveralThreadsKeepTheBuffer) {
  // The contract (ir/cow_vector.h): copies of one buffer may be made and dropped on several
  // threads; the shared count must neither free the buffer early nor let a change land in it.
  CowVector<std::string> shared{"a", "b"};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        CowVector<std::string> copy = shared;
        CowVector<std::string> moved = std::move(copy);
        if (i % 1000 == 0) moved.push_back("own");  // a change copies, leaving `shared` alone
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(shared.vec(), (std::vector<std::string>{"a", "b"}));
  CowVector<std::string> last = shared;
  last.push_back("c");  // had the count drifted below two, this would change `shared` in place
  EXPECT_EQ(shared.size(), 2u);
  EXPECT_EQ(last.size(), 3u);
}

TEST(BoundSymbolCopy, SharesItsListsUntilOneSideChanges) {
  BoundSymbol original;
  original.symbol = &structural::ret();
  original.args = {Value::integer(1), Value::string("x")};
  original.kwargs = {{"k", Value::integer(2)}};
  original.outputs = {make_proxy("t0", ProxyKind::any)};
  original.tags = {"tag"};
  BoundSymbol copy = original;
  EXPECT_TRUE(copy.args.shares_with(original.args));
  EXPECT_TRUE(copy.kwargs.shares_with(original.kwargs));
  EXPECT_TRUE(copy.outputs.shares_with(original.outputs));
  EXPECT_TRUE(copy.tags.shares_with(original.tags));

  copy.args[0] = Value::integer(7);
  copy.kwargs.push_back({"m", Value::none()});
  EXPECT_EQ(original.args[0].i, 1);
  EXPECT_EQ(copy.args[0].i, 7);
  EXPECT_EQ(original.kwargs.size(), 1u);
  EXPECT_EQ(copy.kwargs.size(), 2u);
  EXPECT_TRUE(copy.outputs.shares_with(original.outputs));  // untouched lists stay shared
}

TEST(ValueCopy, SharesItsItemsEntriesAndTextUntilOneSideChanges) {
  Value original = Value::tuple({Value::integer(1), Value::name("group"),
                                 Value::dict({{Value::string("k"), Value::floating(0.5)}})});
  Value copy = original;
  EXPECT_TRUE(copy.items.shares_with(original.items));
  copy.items[0] = Value::integer(7);
  copy.items[2].entries[0].second = Value::floating(2.5);
  EXPECT_EQ(original.items[0].i, 1);
  EXPECT_EQ(copy.items[0].i, 7);
  EXPECT_EQ(original.items[2].entries[0].second.f, 0.5);
  EXPECT_EQ(copy.items[2].entries[0].second.f, 2.5);
  EXPECT_EQ(python_text(original), "(1, group, {'k': 0.5})");
  EXPECT_EQ(python_text(copy), "(7, group, {'k': 2.5})");

  // A value's text reads as a string, compares with one, and an empty text holds nothing.
  const Value& name = original.items[1];
  EXPECT_EQ(name.s, "group");
  EXPECT_NE(name.s, "other");
  EXPECT_EQ("<" + name.s + ">", "<group>");
  EXPECT_TRUE(Value::string("").s.empty());
  EXPECT_EQ(Value::string("").s.str(), "");
  // A walk over a value's empty lists gives them no buffer.
  Value lone = Value::of(make_proxy("t0", ProxyKind::any));
  for (auto& x : lone.items) (void)x;
  EXPECT_FALSE(lone.items.shares_with(lone.items));
}

TEST(BoundSymbolCopy, APassSharesTheStatementsItKeeps) {
  ltorch::register_ops();
  TraceBuilder b;
  auto x = b.input(make_tensor("x", {2, 3}, DType::f32, Device{}));
  ProxyPtr used = ltorch::add(b, Value::of(x), Value::of(x));
  ltorch::exp(b, used);  // dead
  auto acquired = b.finish(Value::of(used));
  auto cleaned = passes::dead_code_elimination(*acquired);
  ASSERT_EQ(cleaned->body.size(), acquired->body.size() - 1);
  const BoundSymbol& add_before = acquired->body[1];
  const BoundSymbol& add_after = cleaned->body[1];
  ASSERT_EQ(add_after.name(), "ltorch.add");
  EXPECT_TRUE(add_after.args.shares_with(add_before.args));
  EXPECT_TRUE(add_after.outputs.shares_with(add_before.outputs));
  EXPECT_TRUE(add_after.subsymbols.shares_with(add_before.subsymbols));
}

TEST(TraceBuilderNames, FreshNamesSkipReservedOnes) {
  TraceBuilder b;
  for (const char* n : {"t0", "t1", "t3", "t07", "t12345678", "ft0"}) b.reserve_name(n);
  EXPECT_EQ(b.fresh_name(), "t2");
  EXPECT_EQ(b.fresh_name(), "t4");
  EXPECT_EQ(b.fresh_name("ft"), "ft5");  // one counter for every prefix
  EXPECT_EQ(b.fresh_name(), "t6");
  EXPECT_EQ(b.fresh_name(), "t7");  // "t07" is another name
}

TEST(TraceBuilderNames, NamesReservedOnceServeSeveralBuilders) {
  ReservedNames names;
  for (const char* n : {"t0", "t2", "x", "t07"}) names.add(n);
  ReservedNames more;
  more.add("t1");
  more.add(names);
  EXPECT_TRUE(more.contains("t2") && more.contains("x") && more.contains("t07") && more.contains("t1"));
  EXPECT_FALSE(more.contains("t3") || more.contains("t7"));
  for (int k = 0; k < 2; ++k) {  // each builder gets every name, the set stays as it was
    TraceBuilder b;
    b.reserve_names(more);
    EXPECT_EQ(b.fresh_name(), "t3");
    EXPECT_EQ(b.fresh_name("x"), "x4");
  }
}

TEST(Shared, CopiesShareOneObjectAndTheLastOneFreesIt) {
  struct Counted {
    std::atomic<int>* alive;
    explicit Counted(std::atomic<int>* a) : alive(a) { ++*alive; }
    Counted(const Counted&) = delete;
    Counted(Counted&& o) noexcept : alive(o.alive) { ++*alive; }
    ~Counted() { --*alive; }
  };
  std::atomic<int> alive{0};
  {
    Shared<Counted> none;
    EXPECT_FALSE(none);
    EXPECT_TRUE(none == nullptr);
    auto one = Shared<Counted>::make(&alive);
    EXPECT_EQ(alive.load(), 1);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([one] {
        for (int i = 0; i < 10000; ++i) {
          Shared<Counted> copy = one;
          Shared<Counted> moved = std::move(copy);
          EXPECT_TRUE(moved == one);
        }
      });
    for (auto& t : threads) t.join();
    EXPECT_EQ(alive.load(), 1);
    Shared<Counted> other = one;
    one = nullptr;
    EXPECT_EQ(alive.load(), 1);
    EXPECT_EQ(other->alive, &alive);
  }
  EXPECT_EQ(alive.load(), 0);
}

TEST(NameTables, KeepEveryNameApartWhetherNumberedOrNot) {
  // "t7" by its number; "t07", "t", "x7", "t_w" and numbers past the array's reach hashed.
  const std::vector<std::string> names = {"t0", "t7", "t1048575", "t1048576", "t9999999", "t12345678",
                                          "t07", "t", "x7", "t_w", "t7a"};
  NameSet set;
  NameMap<size_t> map;
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_FALSE(set.contains(names[i])) << names[i];
    EXPECT_TRUE(set.insert(names[i])) << names[i];
    EXPECT_FALSE(set.insert(names[i])) << names[i];
    map[names[i]] = i;
  }
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_TRUE(set.contains(names[i])) << names[i];
    ASSERT_NE(map.find(names[i]), nullptr) << names[i];
    EXPECT_EQ(*map.find(names[i]), i) << names[i];
  }
  for (const char* absent : {"t1", "t6", "t8", "t70", "t1048574", "t10000000", "t00", "y7"}) {
    EXPECT_FALSE(set.contains(absent)) << absent;
    EXPECT_EQ(map.find(absent), nullptr) << absent;
  }
  auto [entry, made] = map.emplace("t7", 99);
  EXPECT_FALSE(made);  // an existing entry is kept
  EXPECT_EQ(*entry, 1u);
  EXPECT_EQ(default_name_number("t1048576"), 1048576);
  EXPECT_EQ(default_name_number("t07"), -1);
}
