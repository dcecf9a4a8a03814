// The optimization passes: DCE, CSE, fusion grouping, rematerialization and delete-last-used, on
// Thunder's own traces (tests/fixtures/thunder) and on small traces built with the ltorch ops.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "canonical/canonical.h"
#include "format/parser.h"
#include "format/printer.h"
#include "ir/builder.h"
#include "ops/ltorch.h"
#include "passes/passes.h"
#include "test_util.h"

using namespace tv;
using namespace tv::passes;

namespace {

class Passes : public ::testing::Test {
 protected:
  void SetUp() override { ltorch::register_ops(); }
};

std::string fixture_text(const std::string& name) {
  return tv::testing::read_file(std::string(TV_FIXTURES_DIR) + "/" + name);
}

TracePtr parse(const std::string& text) {
  auto r = parse_trace(text);
  EXPECT_TRUE(r) << (r.error ? r.error->describe("<text>") : "");
  return r.trace;
}

TracePtr fixture(const std::string& name) { return parse(fixture_text(name)); }

// The trace without `del` statements (and without collection clears when `clears`).
TracePtr strip(const Trace& t, bool clears) {
  auto out = std::make_shared<Trace>(t);
  out->body = strip_deletions(t.body, clears);
  return out;
}

std::vector<std::string> top_level_symbols(const Trace& t) {
  std::vector<std::string> out;
  for (const auto& b : t.body) out.push_back(b.symbol->name);
  return out;
}

size_t count_symbol(const Trace& t, const std::string& name) {
  size_t n = 0;
  for (const auto& b : t.body) n += b.symbol->name == name;
  return n;
}

std::set<std::string> defined_names(const Trace& t) {
  std::set<std::string> out;
  for (const auto& p : t.params) out.insert(p.proxy->name);
  for (const auto& b : t.body)
    for (const auto& o : b.outputs) out.insert(o->name);
  return out;
}

// Names read by a top-level statement before any statement (or parameter) defines them.
std::vector<std::string> free_reads(const Trace& t) {
  std::set<std::string> defined;
  for (const auto& p : t.params) defined.insert(p.proxy->name);
  std::vector<std::string> out;
  for (const auto& b : t.body) {
    for (const auto& p : b.inputs())
      if (!defined.count(p->name)) out.push_back(p->name);
    for (const auto& o : b.outputs) defined.insert(o->name);
  }
  return out;
}

const BoundSymbol* defining(const Trace& t, const std::string& name) {
  for (const auto& b : t.body)
    for (const auto& o : b.outputs)
      if (o->name == name) return &b;
  return nullptr;
}

std::string names_text(const std::vector<ProxyPtr>& ps) {
  std::string out;
  for (const auto& p : ps) out += (out.empty() ? "" : ", ") + p->name;
  return out;
}

// x: f32[2, 3], y: f32[2, 3]
struct Small {
  TraceBuilder b;
  ProxyPtr x, y;
  Small() {
    x = b.input(make_tensor("x", {2, 3}, DType::f32, Device{}));
    y = b.input(make_tensor("y", {2, 3}, DType::f32, Device{}));
  }
};

Value V(const ProxyPtr& p) { return Value::of(p); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Delete Last Used

TEST_F(Passes, DeleteLastUsedReproducesThunderFixtures) {
  const char* names[] = {"mlp__bwd__00",  "linear__bwd__00", "ddp_jit_then_ddp__bwd__00",
                         "mlp__fwd__05",  "mlp__fwd__06",    "linear__fwd__05",
                         "linear__fwd__06", "ddp_jit_then_ddp__fwd__07", "ddp_jit_then_ddp__fwd__08"};
  for (const char* name : names)
    for (const char* suffix : {".txt", ".python.txt"}) {
      std::string file = std::string(name) + suffix;
      SCOPED_TRACE(file);
      std::string text = fixture_text(file);
      auto original = parse(text);
      ASSERT_TRUE(original);
      ASSERT_EQ(original->provenance->pass, "Delete Last Used");
      for (bool strip_clears : {false, true}) {
        auto stripped = strip(*original, strip_clears);
        EXPECT_FALSE(has_deletions(*stripped));
        auto again = delete_last_used(*stripped);
        ASSERT_TRUE(again->provenance);
        EXPECT_EQ(again->provenance->pass, "Delete Last Used");
        ASSERT_TRUE(again->provenance->milliseconds.has_value());
        auto same_time = std::make_shared<Trace>(*again);
        same_time->provenance = original->provenance;
        EXPECT_EQ(print_trace(*same_time), text);
      }
    }
}

TEST_F(Passes, DeleteLastUsedOrdersNamesAsThunder) {
  auto bwd = delete_last_used(*strip(*fixture("mlp__bwd__00.txt"), true));
  std::string text = print_trace(*bwd);
  // outputs before arguments, arguments left to right; collections cleared in Thunder's order
  EXPECT_NE(text.find("  clear_mutable_collection(saved_for_backward)\n  clear_mutable_collection(C1)\n"
                      "  del C1, saved_for_backward\n"),
            std::string::npos);
  EXPECT_NE(text.find("del t105, t_fc2_weight"), std::string::npos);
  EXPECT_NE(text.find("del t84, t91"), std::string::npos);
  EXPECT_NE(text.find("del t99, t96"), std::string::npos);
  // returned values are never deleted
  for (const auto& b : bwd->body)
    if (b.symbol->form == PrintForm::del) {
      for (const auto& a : b.args) EXPECT_NE(a.proxy->name, "t117");
    }
}

TEST_F(Passes, DeleteLastUsedOnBuiltTrace) {
  Small s;
  auto a = ltorch::add(s.b, V(s.x), V(s.y));
  auto c = ltorch::exp(s.b, a);
  auto d = ltorch::mul(s.b, V(c), V(s.x));
  auto t = s.b.finish(V(d));
  auto out = delete_last_used(*t);
  // x, y are inputs not returned: y dies at the add, x at the mul; a dies at the exp; c at the mul
  std::vector<std::string> lines;
  for (const auto& b : out->body) lines.push_back(print_statement(b));
  std::vector<std::string> dels;
  for (const auto& l : lines)
    if (l.rfind("del ", 0) == 0) dels.push_back(l);
  EXPECT_EQ(dels, (std::vector<std::string>{"del y", "del " + a->name, "del " + c->name + ", x"}));
  EXPECT_EQ(out->body.back().symbol->form, PrintForm::ret);
  // idempotent
  EXPECT_EQ(print_trace(*delete_last_used(*out), {.provenance = false}), print_trace(*out, {.provenance = false}));
}

// ---------------------------------------------------------------------------------------------
// Dead Code Elimination

TEST_F(Passes, DceRemovesExactlyTheDeadValues) {
  Small s;
  auto live = ltorch::add(s.b, V(s.x), V(s.y));
  auto dead1 = ltorch::mul(s.b, V(s.x), Value::floating(2.0));
  auto dead2 = ltorch::exp(s.b, dead1);
  auto rnd = ltorch::dropout(s.b, s.x, 0.5, 7);  // unused sample: collected too
  auto out_v = ltorch::tanh(s.b, live);
  auto t = s.b.finish(V(out_v));
  auto d = dead_code_elimination(*t);
  EXPECT_EQ(d->provenance->pass, "Dead Code Elimination");
  auto before = defined_names(*t), after = defined_names(*d);
  std::set<std::string> removed;
  for (const auto& n : before)
    if (!after.count(n)) removed.insert(n);
  EXPECT_EQ(removed, (std::set<std::string>{dead1->name, dead2->name, rnd->name}));
  EXPECT_EQ(top_level_symbols(*d),
            (std::vector<std::string>{"unpack_trivial", "unpack_trivial", "ltorch.add", "ltorch.tanh", "python_return"}));
  // the input trace is untouched
  EXPECT_EQ(t->body.size(), 8u);
  // a second run changes nothing
  EXPECT_EQ(canonical_text(*dead_code_elimination(*d)), canonical_text(*d));
}

TEST_F(Passes, DceKeepsChecksCollectivesAndSideEffects) {
  auto t = parse(
      "def f(x):\n"
      "  # x: \"cpu f32[2]\"\n"
      "  prims.check_tensor_shape_and_metadata(x, (2,), 'cpu', torch.float32, False)\n"
      "  t0 = prims.add(x, x)  # t0: \"cpu f32[2]\"\n"
      "  ft1 = torch_all_reduce_prim_impl(t0, _DistributedReduceOps_SUM_0, _pg_1, True, False)  # ft1: \"cpu f32[2]\"\n"
      "  t2 = prims.mul(x, x)  # t2: \"cpu f32[2]\"\n"
      "  t3 = prims.exp(t2)  # t3: \"cpu f32[2]\"\n"
      "  del t2\n"
      "  return x");
  ASSERT_TRUE(t);
  auto d = dead_code_elimination(*t);
  std::string text = print_trace(*d, {.provenance = false});
  EXPECT_NE(text.find("prims.check_tensor_shape_and_metadata"), std::string::npos);
  EXPECT_NE(text.find("torch_all_reduce_prim_impl"), std::string::npos);
  EXPECT_NE(text.find("t0 = prims.add"), std::string::npos);  // read by the kept collective
  EXPECT_EQ(text.find("t2 = prims.mul"), std::string::npos);
  EXPECT_EQ(text.find("t3 = prims.exp"), std::string::npos);
  EXPECT_EQ(text.find("del t2"), std::string::npos);  // the del of a removed value goes too
}

TEST_F(Passes, DceOnThunderForwardMatchesThunder) {
  // Thunder's own DCE left the mlp forward as it was (fwd__02 -> fwd__03): so do we.
  auto in = fixture("mlp__fwd__02.txt"), thunder = fixture("mlp__fwd__03.txt");
  auto d = dead_code_elimination(*in);
  EXPECT_TRUE(canonically_equal(*d, *thunder));
  EXPECT_EQ(print_trace(*d, {.provenance = false}), print_trace(*thunder, {.provenance = false}));
  // every statement of the backward is needed
  auto bwd = fixture("mlp__bwd__00.txt");
  EXPECT_EQ(dead_code_elimination(*bwd)->body.size(), bwd->body.size());
}

// ---------------------------------------------------------------------------------------------
// Common Subexpression Elimination

TEST_F(Passes, CseMergesDuplicatesTransitively) {
  Small s;
  auto a = ltorch::add(s.b, V(s.x), V(s.y));
  auto b = ltorch::add(s.b, V(s.x), V(s.y));       // = a
  auto c = ltorch::mul(s.b, V(a), Value::floating(2.0));
  auto d = ltorch::mul(s.b, V(b), Value::floating(2.0));  // = c once b -> a
  auto e = ltorch::mul(s.b, V(a), Value::integer(2));     // 2 and 2.0 differ
  auto t = s.b.finish(Value::tuple({V(c), V(d), V(e)}));
  auto out = common_subexpression_elimination(*t);
  EXPECT_EQ(out->provenance->pass, "Common Subexpression Elimination");
  EXPECT_EQ(count_symbol(*out, "ltorch.add"), 1u);
  EXPECT_EQ(count_symbol(*out, "ltorch.mul"), 2u);
  EXPECT_EQ(python_text(out->returned()), "(" + c->name + ", " + c->name + ", " + e->name + ")");
  EXPECT_TRUE(free_reads(*out).empty());
  // the merged statement's subsymbols read the representative too
  EXPECT_EQ(defining(*out, d->name), nullptr);
  EXPECT_EQ(defining(*out, b->name), nullptr);
}

TEST_F(Passes, CseMergesCallsWhoseArgumentsPrintAlike) {
  // Floats by their bits: 0.0 and -0.0 print apart; every NaN prints `float('NaN')`.
  Small s;
  auto zero = ltorch::mul(s.b, V(s.x), Value::floating(0.0));
  auto negative_zero = ltorch::mul(s.b, V(s.x), Value::floating(-0.0));
  auto nan = ltorch::mul(s.b, V(s.x), Value::floating(std::nan("1")));
  auto other_nan = ltorch::mul(s.b, V(s.x), Value::floating(std::nan("2")));  // = nan
  auto half = ltorch::mul(s.b, V(s.x), Value::floating(0.5));
  auto same_half = ltorch::mul(s.b, V(s.x), Value::floating(0.5));  // = half
  auto t = s.b.finish(Value::tuple({V(zero), V(negative_zero), V(nan), V(other_nan), V(half), V(same_half)}));
  auto out = common_subexpression_elimination(*t);
  EXPECT_EQ(count_symbol(*out, "ltorch.mul"), 4u);
  EXPECT_EQ(python_text(out->returned()), "(" + zero->name + ", " + negative_zero->name + ", " + nan->name + ", " +
                                              nan->name + ", " + half->name + ", " + half->name + ")");
  EXPECT_TRUE(free_reads(*out).empty());
}

TEST_F(Passes, CseNeverMergesRandomOps) {
  Small s;
  auto r1 = ltorch::dropout(s.b, s.x, 0.5, 3);
  auto r2 = ltorch::dropout(s.b, s.x, 0.5, 3);  // same call, but two samples
  auto t = s.b.finish(Value::tuple({V(r1), V(r2)}));
  auto out = common_subexpression_elimination(*t);
  EXPECT_EQ(count_symbol(*out, "ltorch.dropout"), 2u);
  EXPECT_EQ(python_text(out->returned()), "(" + r1->name + ", " + r2->name + ")");
}

TEST_F(Passes, CseOnThunderBackwardMergesTheRepeatedReshape) {
  // Thunder's mlp backward reshapes the cotangent twice: t105 and t106 = torch.reshape(t52, (-1, 64)).
  auto bwd = fixture("mlp__bwd__00.txt");
  auto out = common_subexpression_elimination(*bwd);
  EXPECT_EQ(defining(*out, "t106"), nullptr);
  ASSERT_NE(defining(*bwd, "t92"), nullptr);
  const BoundSymbol* t92 = defining(*out, "t92");
  ASSERT_NE(t92, nullptr);
  EXPECT_EQ(print_statement(*t92), "t92 = torch.permute(t105, (1, 0))  # t92: \"cuda:0 f32[64, 2]\"");
  EXPECT_EQ(print_statement(t92->subsymbols.at(0).subsymbols.at(0)),
            "t92 = prims.transpose(t105, (1, 0))  # t92: \"cuda:0 f32[64, 2]\"");
  EXPECT_TRUE(free_reads(*out).empty());
  // dels were regenerated for the new lifetimes: t105 now lives until t92
  EXPECT_EQ(print_trace(*delete_last_used(*strip(*out, true)), {.provenance = false}),
            print_trace(*out, {.provenance = false}));
  std::string text = print_trace(*out);
  EXPECT_EQ(text.find("del t105, t_fc2_weight"), std::string::npos);
  EXPECT_NE(text.find("  del t_fc2_weight\n"), std::string::npos);
  EXPECT_LT(text.find("t92 = torch.permute"), text.find("  del t105\n"));
  // nothing else was merged
  EXPECT_EQ(out->body.size(), bwd->body.size() - 1);
}

// ---------------------------------------------------------------------------------------------
// Fusion

namespace {

bool fusible_outside(const BoundSymbol& b) {
  return !is_fusion_region(b) && b.symbol->form == PrintForm::call && !b.outputs.empty() &&
         (has_trait(b, Trait::elementwise) || has_trait(b, Trait::shape));
}

// Regions are maximal: no region or fusible statement stands next to a region, and no two
// fusible statements stand next to each other.
void expect_maximal(const Trace& t) {
  std::vector<const BoundSymbol*> body;
  for (const auto& b : t.body)
    if (b.symbol->form != PrintForm::del) body.push_back(&b);
  for (size_t i = 0; i + 1 < body.size(); ++i) {
    bool a = is_fusion_region(*body[i]) || fusible_outside(*body[i]);
    bool b = is_fusion_region(*body[i + 1]) || fusible_outside(*body[i + 1]);
    EXPECT_FALSE(a && b) << print_statement(*body[i]) << "\n" << print_statement(*body[i + 1]);
  }
}

void expect_round_trip(const Trace& t) {
  std::string text = print_trace(t);
  auto again = parse(text);
  ASSERT_TRUE(again);
  EXPECT_EQ(print_trace(*again), text);
  EXPECT_TRUE(canonically_equal(*again, t));
}

}  // namespace

TEST_F(Passes, FusionGroupsMaximalElementwiseRuns) {
  TraceBuilder b;
  auto x = b.input(make_tensor("x", {2, 5}, DType::f32, Device{}));
  auto w = b.input(make_tensor("w", {4, 5}, DType::f32, Device{}));
  auto t0 = ltorch::linear(b, x, w, nullptr);           // matmul
  auto t1 = ltorch::mul(b, V(t0), Value::floating(2.0));  // region 0 ...
  auto t2 = ltorch::exp(b, t1);
  auto t3 = ltorch::add(b, V(t2), V(t0));
  auto t4 = ltorch::reshape(b, t3, {8});                // ... shape ops join
  auto t5 = ltorch::sum(b, t4);                          // reduction
  auto t6 = ltorch::neg(b, t5);                          // alone: not a region
  auto t7 = ltorch::sum(b, t2);
  auto t = b.finish(Value::tuple({V(t6), V(t7), V(t1)}));

  auto f = fusion_grouping(*t);
  EXPECT_EQ(f->provenance->pass, "Fusion");
  EXPECT_EQ(top_level_symbols(*f), (std::vector<std::string>{"unpack_trivial", "unpack_trivial", "ltorch.linear",
                                                              "fusion0", "ltorch.sum", "ltorch.neg", "ltorch.sum",
                                                              "python_return"}));
  const BoundSymbol& r = f->body[3];
  ASSERT_TRUE(is_fusion_region(r));
  EXPECT_EQ(r.subsymbols.size(), 4u);
  EXPECT_EQ(python_text(Value::tuple(r.args)), "(" + t0->name + ",)");
  // outputs: what is read after the region (t4 by the sum, t2 by the later sum) or returned (t1)
  EXPECT_EQ(names_text(r.outputs), t1->name + ", " + t2->name + ", " + t4->name);
  expect_maximal(*f);
  expect_round_trip(*f);
  // same program once the regions are opened
  EXPECT_TRUE(canonically_equal(*unfuse(*f), *t));
  // printed as a call with its members one level down
  std::string text = print_trace(*f);
  EXPECT_NE(text.find("  (" + t1->name + ", " + t2->name + ", " + t4->name + ") = fusion0(" + t0->name + ")"),
            std::string::npos);
  EXPECT_NE(text.find("\n    # " + t2->name + " = ltorch.exp(" + t1->name + ")"), std::string::npos);
}

TEST_F(Passes, FusionOnThunderTraces) {
  for (const char* name : {"mlp__fwd__06.txt", "mlp__bwd__00.txt", "linear__bwd__00.txt", "mlp__fwd__02.txt"}) {
    SCOPED_TRACE(name);
    auto t = fixture(name);
    auto f = fusion_grouping(*t);
    expect_maximal(*f);
    expect_round_trip(*f);
    // the meaning is kept: opening the regions gives the same program (dels aside)
    EXPECT_EQ(canonical_text(*strip(*unfuse(*f), false)), canonical_text(*strip(*t, false)));
    // dels are consistent with the new statements
    if (has_deletions(*t)) {
      EXPECT_EQ(print_trace(*delete_last_used(*strip(*f, true)), {.provenance = false}),
                print_trace(*f, {.provenance = false}));
    }
  }
  // GELU of the mlp forward: t104 .. t88 become one region reading t84
  auto f = fusion_grouping(*fixture("mlp__fwd__06.txt"));
  const BoundSymbol* region = defining(*f, "t88");
  ASSERT_NE(region, nullptr);
  ASSERT_TRUE(is_fusion_region(*region));
  EXPECT_EQ(print_statement(*region).rfind("(t104, t87, t88) = fusion0(t84)  # t104: \"cuda:0 f32[2, 256]\"", 0), 0u);
  EXPECT_EQ(region->subsymbols.size(), 5u);
  EXPECT_EQ(print_trace(*f).find("del t85"), std::string::npos);  // internal to the region now
  // the backward: reshape/permute runs and the long GELU-gradient run
  auto fb = fusion_grouping(*fixture("mlp__bwd__00.txt"));
  size_t regions = 0;
  for (const auto& b : fb->body) regions += is_fusion_region(b);
  EXPECT_EQ(regions, 2u);
  const BoundSymbol* big = defining(*fb, "t102");
  ASSERT_NE(big, nullptr);
  ASSERT_TRUE(is_fusion_region(*big));
  EXPECT_EQ(big->subsymbols.size(), 13u);  // t94 .. t114
}

// ---------------------------------------------------------------------------------------------
// Rematerialization

TEST_F(Passes, RematLowersSavedBytesOnMlp) {
  for (const char* fwd_name : {"mlp__fwd__05.txt", "mlp__fwd__06.txt"}) {
    SCOPED_TRACE(fwd_name);
    auto fwd = fixture(fwd_name), bwd = fixture("mlp__bwd__00.txt");
    EXPECT_EQ(names_text(saved_for_backward(*fwd)), "t_fc2_weight, t88, t87, t84, t104, x");
    auto r = rematerialize(*fwd, *bwd);
    ASSERT_TRUE(r.changed);
    EXPECT_EQ(r.forward->provenance->pass, "Rematerialization");
    EXPECT_EQ(r.backward->provenance->pass, "Rematerialization");
    // 64*256*4 + 5 * 2*256*4 + 2*64*4 before; t88, t87, t104 are recomputed from t84
    EXPECT_EQ(r.saved_bytes_before, 65536 + 4 * 2048 + 512);
    EXPECT_EQ(r.saved_bytes_after, 65536 + 2048 + 512);
    EXPECT_LT(r.saved_bytes_after, r.saved_bytes_before);
    EXPECT_EQ(saved_bytes(*r.forward), r.saved_bytes_after);
    EXPECT_EQ(r.recomputed, (std::vector<std::string>{"t88", "t87", "t104"}));
    EXPECT_TRUE(r.added.empty());
    EXPECT_EQ(names_text(saved_for_backward(*r.forward)), "t_fc2_weight, t84, x");
    // the forward computes the same things, it only saves less
    auto statements = [](const Trace& t) {
      std::vector<std::string> out;
      for (const auto& b : t.body)
        if (b.symbol->form != PrintForm::del && b.symbol->form != PrintForm::ret) out.push_back(print_statement(b));
      return out;
    };
    EXPECT_EQ(statements(*r.forward), statements(*fwd));
    // t87 and t104 are no longer saved, so the forward frees them early
    EXPECT_NE(print_trace(*r.forward).find("del t87"), std::string::npos);

    // the backward unpacks the new saved tuple and reads nothing else from the forward
    const Trace& b = *r.backward;
    EXPECT_TRUE(free_reads(b).empty());
    std::string text = print_trace(b);
    EXPECT_NE(text.find("  t_fc2_weight, t84, x, = C0\n"), std::string::npos);
    // the GELU chain is recomputed from t84, before its first use
    for (const char* line : {"  t104 = torch_div_prim_impl(t84, 1.4142135623730951)",
                             "  t85 = torch.erf(t104)", "  t86 = torch.mul(0.5, t85)",
                             "  t87 = torch.add(0.5, t86, alpha=1)", "  t88 = torch.mul(t84, t87)"})
      EXPECT_NE(text.find(line), std::string::npos) << line;
    EXPECT_LT(text.find("t88 = torch.mul(t84, t87)"), text.find("t107 = torch.reshape(t88, (-1, 256))"));
    EXPECT_LT(text.find("t90 = torch.matmul"), text.find("t104 = torch_div_prim_impl"));
    // dels and clears follow Thunder's rules on the new backward
    EXPECT_EQ(print_trace(*delete_last_used(*strip(b, true)), {.provenance = false}),
              print_trace(b, {.provenance = false}));
    // both traces print and parse back
    expect_round_trip(*r.forward);
    expect_round_trip(b);
    // the inputs are untouched
    EXPECT_EQ(names_text(saved_for_backward(*fwd)), "t_fc2_weight, t88, t87, t84, t104, x");
  }
}

TEST_F(Passes, RematLeavesUnrecognisedOrUselessPairsAlone) {
  // linear: the only saved value is an input; nothing to recompute.
  auto fwd = fixture("linear__fwd__06.txt"), bwd = fixture("linear__bwd__00.txt");
  auto r = rematerialize(*fwd, *bwd);
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(r.saved_bytes_before, 2 * 5 * 4);
  EXPECT_EQ(r.saved_bytes_after, r.saved_bytes_before);
  EXPECT_EQ(print_trace(*r.backward, {.provenance = false}), print_trace(*bwd, {.provenance = false}));
  // a plain computation trace has no saved tuple
  auto plain = fixture("mlp__fwd__02.txt");
  EXPECT_FALSE(rematerialize(*plain, *bwd).changed);
}

TEST_F(Passes, PassesNameThemselvesAndKeepInputs) {
  auto t = fixture("mlp__bwd__00.txt");
  std::string before = print_trace(*t);
  for (auto [pass, name] : std::vector<std::pair<TracePtr (*)(const Trace&), std::string>>{
           {dead_code_elimination, "Dead Code Elimination"},
           {common_subexpression_elimination, "Common Subexpression Elimination"},
           {fusion_grouping, "Fusion"}}) {
    auto out = pass(*t);
    ASSERT_TRUE(out->provenance);
    EXPECT_EQ(out->provenance->pass, name);
    EXPECT_TRUE(out->provenance->milliseconds.has_value());
  }
  EXPECT_EQ(print_trace(*t), before);
}

// Peak live bytes from the statements: every output allocated when it runs, freed at its del; a
// reshape (a view) adds nothing. Without dels the peak is everything the trace makes.
TEST_F(Passes, TraceMemoryFollowsTheDels) {
  Small s;  // x, y: f32[2, 3], 24 bytes each
  auto a = ltorch::add(s.b, V(s.x), V(s.y));
  auto c = ltorch::exp(s.b, a);
  auto r = ltorch::reshape(s.b, c, {3, 2});
  auto d = ltorch::mul(s.b, V(r), V(ltorch::reshape(s.b, s.x, {3, 2})));
  auto t = s.b.finish(V(d));
  auto before = trace_memory(*t);
  EXPECT_EQ(before.peak_live, 5 * 24) << print_trace(*t);
  ASSERT_GE(before.peak_at, 0);
  EXPECT_EQ(t->body[before.peak_at].name(), "ltorch.mul");
  EXPECT_EQ(before.saved_for_backward, 0);
  auto after = trace_memory(*delete_last_used(*t));
  EXPECT_EQ(after.peak_live, 3 * 24) << print_trace(*delete_last_used(*t));
}
