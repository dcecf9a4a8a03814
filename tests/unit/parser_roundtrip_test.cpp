// The parse -> print -> parse law on the constructs of Thunder's trace format: regressions of
// texts that broke it, traces generated from the grammar with a fixed seed, symbols the registry
// does not know, and input that is cut off or not a trace.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>

#include "canonical/canonical.h"
#include "diff/diff.h"
#include "format/parser.h"
#include "format/printer.h"

using namespace tv;

namespace {

TracePtr parse_ok(const std::string& text) {
  auto r = parse_trace(text);
  EXPECT_TRUE(r) << r.error->describe("text") << "\n" << text;
  return r.trace;
}

// print(parse(text)) == text, and two more cycles change nothing.
void expect_round_trip(const std::string& text) {
  std::string current = text;
  for (int cycle = 0; cycle < 3; ++cycle) {
    auto t = parse_ok(current);
    if (!t) return;
    auto printed = print_trace(*t);
    ASSERT_EQ(printed, text) << "cycle " << cycle;
    current = printed;
  }
}

ParseError error_of(const std::string& text) {
  auto r = parse_trace(text);
  EXPECT_FALSE(r) << "expected an error for:\n" << text;
  return r.error.value_or(ParseError{});
}

const BoundSymbol* defining(const Trace& t, const std::string& name) {
  const BoundSymbol* found = nullptr;
  walk(t.body, [&](const BoundSymbol& b, int) {
    for (const auto& o : b.outputs)
      if (!found && o->name == name) found = &b;
  });
  return found;
}

}  // namespace

// ---- Regressions of the round-trip law ----

TEST(ParserRoundTrip, MultiOutputCallWithoutTypeComment) {
  std::string text = "\ndef f(a):\n  (t3, t4) = g(a)\n  return t3";
  expect_round_trip(text);
  auto t = parse_ok(text);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->body[0].outputs.size(), 2u);
  // Only the outputs with a type are listed in the comment.
  expect_round_trip("\ndef f(a):\n  (t3, t4) = g(a)  # t4: \"cpu f32[2]\"\n  return t3");
}

TEST(ParserRoundTrip, NewlineInTypeStringStaysEscaped) {
  std::string text = "\ndef f(x):\n  # x: \"first\\nsecond\"\n  return x";
  expect_round_trip(text);
  auto t = parse_ok(text);
  ASSERT_TRUE(t);
  EXPECT_EQ(type_text(*t->body[0].output()), "first\nsecond");
}

TEST(ParserRoundTrip, EscapedQuoteInTypeStringKeepsTheType) {
  std::string text = "\ndef f(x):\n  t0 = g(x)  # t0: \"say \\\"hi\\\" \\\\ there\"\n  return t0";
  expect_round_trip(text);
  auto t = parse_ok(text);
  ASSERT_TRUE(t);
  EXPECT_EQ(type_text(*t->body[0].output()), "say \"hi\" \\ there");
}

TEST(ParserRoundTrip, InputCommentOfANameUnpackedLaterAddsNoLine) {
  expect_round_trip("\ndef f(C0):\n  # t: \"cpu f32[2]\"\n  t, = C0\n  return t");
  expect_round_trip("\ndef f(C0):\n  # t: \"cpu f32[2]\"\n  t, u, = C0\n  # u: \"Any\"\n  return t");
  expect_round_trip("\ndef f(C0, t):\n  # t: \"cpu f32[2]\"\n  t, = C0\n  # t: \"cpu f32[2]\"\n  return t");
}

TEST(ParserRoundTrip, CarriageReturnsEndingACommentAreDropped) {
  // The comment's last CR used to be read as half of a CRLF each time: one fewer per reprint.
  auto t = parse_ok("\ndef f(x):\n  # x: \"cpu\r\r\r\n  # note\r\r\n  return x\r\n");
  ASSERT_TRUE(t);
  std::string printed = print_trace(*t);
  EXPECT_EQ(printed.find('\r'), std::string::npos) << printed;
  expect_round_trip(printed);
}

TEST(ParserRoundTrip, TwentyThousandParametersParse) {
  // Each input comment used to scan every parameter: quadratic in the number of parameters.
  const int n = 20000;
  std::string text = "\ndef computation(";
  for (int i = 0; i < n; ++i) text += (i ? ", p" : "p") + std::to_string(i);
  text += "):";
  for (int i = 0; i < n; ++i) text += "\n  # p" + std::to_string(i) + ": \"cpu f32[" + std::to_string(i % 7 + 1) + "]\"";
  text += "\n  return p0";
  auto t = parse_ok(text);
  ASSERT_TRUE(t);
  ASSERT_EQ(t->params.size(), static_cast<size_t>(n));
  EXPECT_EQ(t->params[n - 1].proxy->shape, (std::vector<int64_t>{(n - 1) % 7 + 1}));
  EXPECT_EQ(print_trace(*t), text);
}

// ---- Constructs of Thunder's printouts ----

TEST(ParserRoundTrip, DestructuringTargets) {
  std::string text =
      "\ndef f(x, y):\n"
      "  [q, k, v] = ltorch.split(x, 64, 2)\n"
      "    # [q, k, v] = prims.split(x, 64, 2)\n"
      "  (t125,) = prims.update_aliases((y,))\n"
      "  (_, _, _, _) = prims.shape(q)\n"
      "  ((a, b), _, [c]) = my.nested(k)\n"
      "  return (q, t125, a, c)";
  expect_round_trip(text);
  auto t = parse_ok(text);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->body[0].outputs.size(), 3u);
  EXPECT_EQ(t->body[0].subsymbols[0].outputs[2], t->body[0].outputs[2]);
  EXPECT_EQ(t->body[1].outputs.size(), 1u);
  EXPECT_TRUE(t->body[2].outputs.empty());
  EXPECT_EQ(t->body[3].outputs.size(), 3u);
  // Renaming works through the targets.
  auto canon = canonical_text(*t);
  EXPECT_NE(canon.find("[p2, p3, p4] = ltorch.split(p0, 64, 2)"), std::string::npos) << canon;
  EXPECT_NE(canon.find("(p5,) = prims.update_aliases((p1,))"), std::string::npos) << canon;
  EXPECT_NE(canon.find("((p6, p7), _, [p8]) = my.nested(p3)"), std::string::npos) << canon;
}

TEST(ParserRoundTrip, LongUnpackingWrapsAsThunderDoes) {
  std::string names, types;
  for (int i = 0; i < 30; ++i) {
    names += "t_long_name_" + std::to_string(i) + ", ";
    types += "\n  # t_long_name_" + std::to_string(i) + ": \"cpu f32[2]\"";
  }
  auto t = parse_ok("\ndef backward_fn(C0):\n  " + names + "= C0" + types + "\n  return None");
  ASSERT_TRUE(t);
  ASSERT_EQ(t->body[0].outputs.size(), 30u);
  auto printed = print_trace(*t);
  EXPECT_NE(printed.find(", \\\n  t_long_name_"), std::string::npos) << printed;
  expect_round_trip(printed);
  // A wrapped line holds at most 80 characters after its indentation, then the backslash.
  for (size_t end = printed.find("\\\n"); end != std::string::npos; end = printed.find("\\\n", end + 1)) {
    size_t start = printed.rfind('\n', end) + 1;
    EXPECT_LE(end - start, 2u + 80u) << printed.substr(start, end - start);
  }
}

TEST(ParserRoundTrip, ContinuationErrorsPointAtThePhysicalLine) {
  auto e = error_of("\ndef f(C0):\n  a, b, \\\n  c, = C0 C1\n  return a");
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.column, 11);
  e = error_of("\ndef f(C0):\n  a, b, \\");
  EXPECT_EQ(e.line, 3);
  EXPECT_NE(e.message.find("continued"), std::string::npos) << e.message;
}

TEST(ParserRoundTrip, LiteralsThunderPrints) {
  std::string text =
      "\ndef f(x):\n"
      "  t0 = ltorch.getitem(x, (..., slice(None,8,None)))  # t0: \"cpu f32[2, 8]\"\n"
      "  t1 = ltorch.tril(t0, 0, fill_value=-float('inf'))  # t1: \"cpu f32[2, 8]\"\n"
      "  t2 = ltorch.eq(t1, float('inf'))  # t2: \"cpu b8[2, 8]\"\n"
      "  t3 = ltorch.full((2,), float('NaN'), device=torch.device(\"cpu\"), dtype=dtypes.float32)  # t3: \"cpu f32[2]\"\n"
      "  t4 = prims.convert_element_type(t2, dtypes.bool8)  # t4: \"cpu b8[2, 8]\"\n"
      "  t5 = ltorch.pad(t0, (-1, -2), -1.5, -9223372036854775808)  # t5: \"cpu f32[2, 5]\"\n"
      "  smooth_l1_loss_vjp(((t5, x), {}), t1)\n"
      "  return t5";
  expect_round_trip(text);
  auto t = parse_ok(text);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->body[1].args[1].kind, Value::Kind::integer);  // 0
  EXPECT_TRUE(std::isinf(t->body[1].kwargs[0].second.f) && t->body[1].kwargs[0].second.f < 0);
  EXPECT_EQ(t->body[3].kwargs[1].second.kind, Value::Kind::dtype);
  EXPECT_EQ(t->body[3].kwargs[1].second.dtype, DType::f32);
  EXPECT_EQ(t->body[4].args[1].dtype, DType::b8);
  EXPECT_EQ(t->body[5].args[3].i, INT64_MIN);
}

// ---- Symbols the registry does not know ----

TEST(ParserRoundTrip, UnknownSymbolsAreKeptOpaqueAndDiff) {
  std::string text =
      "\ndef backward_fn(saved_for_backward, cotangents):\n"
      "  C0, C1, = saved_for_backward\n"
      "  # C0: \"Collection\"\n"
      "  # C1: \"Collection\"\n"
      "  clear_mutable_collection(saved_for_backward)\n"
      "  t1, = C1\n"
      "  # t1: \"cpu f32[2]\"\n"
      "  t2 = smooth_l1_loss_vjp(((t1, t1), {}), t1)  # t2: \"cpu f32[2]\"\n"
      "  ft3 = torch_all_reduce_prim_impl(t2, _DistributedReduceOps_SUM_0, _group_0, True, False)  # ft3: \"FUTURE thunder.devices.Device(type='cuda', index=0) f32[2]\"\n"
      "  [t4, t5] = ltorch.no_such_op_in_registry(t2)\n"
      "  return (t4, ft3)";
  expect_round_trip(text);
  auto t = parse_ok(text);
  ASSERT_TRUE(t);
  for (auto name : {"t2", "t4"}) {
    auto b = defining(*t, name);
    ASSERT_TRUE(b) << name;
    EXPECT_TRUE(b->symbol->opaque) << name;
  }
  EXPECT_EQ(defining(*t, "t2")->output()->shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(defining(*t, "ft3")->output()->kind, ProxyKind::future_tensor);

  // The same program under other names is canonically equal; a changed argument is a change.
  std::string renamed = text;
  for (auto [from, to] : {std::pair{"t2", "u2"}, {"t4", "u4"}}) {
    for (size_t at = renamed.find(from); at != std::string::npos; at = renamed.find(from, at + 2))
      renamed.replace(at, 2, to);
  }
  auto other = parse_ok(renamed);
  ASSERT_TRUE(other);
  EXPECT_TRUE(canonically_equal(*t, *other));
  auto changed = parse_ok([&] {
    auto s = text;
    s.replace(s.find("_group_0, True"), 14, "_group_0, False");
    return s;
  }());
  ASSERT_TRUE(changed);
  auto d = diff_traces(*t, *changed);
  EXPECT_FALSE(d.same_program);
  EXPECT_EQ(d.count(DiffKind::changed), 1);
}

// ---- Input that is not a whole trace ----

TEST(ParserRoundTrip, CutOffPrintoutIsRefused) {
  auto e = error_of("\ndef f(x):\n  # x: \"cpu f32[2]\"\n  t0 = ltorch.neg(x)  # t0: \"cpu f32[2]\"");
  EXPECT_EQ(e.line, 4);
  EXPECT_NE(e.message.find("'return'"), std::string::npos) << e.message;
  e = error_of("\ndef f(x):\n  t0 = ltorch.neg(x)  # t0: \"cpu f");
  EXPECT_EQ(e.line, 3);
  EXPECT_NE(e.message.find("type comment"), std::string::npos) << e.message;
}

TEST(ParserRoundTrip, NameUsedBeforeItsDefinitionIsRefused) {
  auto e = error_of("\ndef f(x):\n  t1 = ltorch.neg(t0)  # t1: \"cpu f32[2]\"\n  t0 = ltorch.neg(x)  # t0: \"cpu f32[2]\"\n  return t1");
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.column, 19);
  EXPECT_NE(e.message.find("'t0' is used before it is defined (on line 4)"), std::string::npos) << e.message;
  // A name never defined is a context object of Thunder's, kept as a name.
  ASSERT_TRUE(parse_ok("\ndef f(x):\n  t1 = g(x, _DistributedReduceOps_SUM_0)  # t1: \"cpu f32[2]\"\n  return t1"));
}

// ---- Traces generated from the grammar ----

namespace {

// Writes random traces in Thunder's format, as the printer writes them, from a seeded generator.
class TraceTextGenerator {
 public:
  explicit TraceTextGenerator(uint32_t seed) : rng_(seed) {}

  std::string trace() {
    defined_.clear();
    counter_ = 0;
    std::string out;
    if (chance(0.5)) out += "# Constructed by " + pick<std::string>({"Dead Code Elimination", "Autograd", "Fusion"}) +
                            (chance(0.5) ? " (took " + std::to_string(uniform(0, 99)) + " milliseconds)" : "") + "\n";
    if (chance(0.7)) out += "import torch\n";
    if (chance(0.4)) out += "from thunder.executors.torchex import no_autocast\n";
    out += "\n";
    if (chance(0.5)) out += "@torch.no_grad()\n";
    if (chance(0.3)) out += "@no_autocast\n";
    int params = uniform(1, 4);
    std::vector<std::string> names;
    for (int i = 0; i < params; ++i) names.push_back(fresh("a"));
    out += "def " + pick<std::string>({"computation", "backward_fn", "augmented_forward_fn"}) + "(";
    for (int i = 0; i < params; ++i) out += (i ? ", " : "") + names[i];
    out += "):";
    for (const auto& n : names)
      if (chance(0.8)) out += "\n  # " + n + ": " + quoted_type();
    int statements = uniform(1, 12);
    for (int i = 0; i < statements; ++i) out += statement(0);
    out += "\n  return " + (chance(0.5) ? use() : literal(2));
    return out;
  }

 private:
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  T pick(std::vector<T> options) { return options[uniform(0, static_cast<int>(options.size()) - 1)]; }

  std::string fresh(const std::string& prefix) {
    auto name = prefix + std::to_string(counter_++);
    defined_.push_back(name);
    return name;
  }
  std::string use() { return defined_.empty() ? "None" : defined_[uniform(0, static_cast<int>(defined_.size()) - 1)]; }

  std::string quoted_type() {
    return pick<std::string>({"\"cpu f32[2, 5]\"", "\"cuda:0 bf16[4]\"", "\"cpu b8[]\"", "\"int 5\"", "\"float -2.5\"",
                              "\"bool True\"", "\"int\"", "\"Collection\"", "\"Any\"", "\"str\"",
                              "\"<class 'torch.dtype'>\"", "\"FUTURE thunder.devices.Device(type='cuda', index=1) f16[10, 5]\"",
                              "\"a \\\"quoted\\\" \\\\ type\\nover two lines\""});
  }

  std::string literal(int depth) {
    int kinds = depth > 0 ? 24 : 19;
    switch (uniform(0, kinds - 1)) {
      case 0: return "None";
      case 1: return pick<std::string>({"True", "False"});
      case 2: return std::to_string(uniform(-1000, 1000));
      case 3: return pick<std::string>({"0.5", "-1.0", "2.0", "1e-05", "-3.25", "1e+20", "0.0001", "-0.0"});
      case 4: return pick<std::string>({"float('inf')", "-float('inf')", "float('NaN')"});
      case 5: return pick<std::string>({"'none'", "'tanh'", "\"it's\"", "'a\\nb'", "''"});
      case 6: return pick<std::string>({"slice(None,8,None)", "slice(8,None,None)", "slice(None, 2, 1)"});
      case 7: return "...";
      case 8: return pick<std::string>({"dtypes.float32", "dtypes.int64", "dtypes.bool8", "dtypes.bfloat16"});
      case 9: return pick<std::string>({"torch.float32", "torch.int64", "torch.bool"});
      case 10: return pick<std::string>({"torch.device(\"cpu\")", "torch.device(\"cuda:1\")"});
      case 11: return pick<std::string>({"_DistributedReduceOps_SUM_0", "_torch_fx_graph_module_3"});
      case 12: return "-" + std::to_string(uniform(1, 9));
      case 13: case 14: case 15: case 16: case 17: case 18: return use();
      case 19: return "(" + literal(depth - 1) + ",)";
      case 20: return "(" + literal(depth - 1) + ", " + literal(depth - 1) + ")";
      case 21: return "[" + literal(depth - 1) + ", " + literal(depth - 1) + "]";
      case 22: return "{'" + std::string(1, static_cast<char>('a' + uniform(0, 5))) + "': " + literal(depth - 1) + "}";
      default: return "()";
    }
  }

  std::string call() {
    std::string callee = pick<std::string>({"ltorch.add", "prims.mul", "ltorch.split", "my_executor_fusion_3",
                                            "smooth_l1_loss_vjp", "torch_all_reduce_prim_impl", "prims.update_aliases"});
    std::string args;
    int n = uniform(0, 4);
    for (int i = 0; i < n; ++i) args += (i ? ", " : "") + literal(2);
    if (chance(0.3)) args += std::string(args.empty() ? "" : ", ") + "alpha=" + literal(1);
    return callee + "(" + args + ")";
  }

  // A target of several outputs: a tuple of two or more, a list, a tuple of one, underscores, nesting.
  std::string target(int depth, std::vector<std::string>& outputs) {
    if (depth == 0 || chance(0.6)) {
      if (chance(0.15)) return "_";
      outputs.push_back(fresh("t"));
      return outputs.back();
    }
    bool list = chance(0.4);
    int n = uniform(1, 3);
    std::string out = list ? "[" : "(";
    for (int i = 0; i < n; ++i) out += (i ? ", " : "") + target(depth - 1, outputs);
    if (!list && n == 1) out += ",";
    return out + (list ? "]" : ")");
  }

  std::string line(int level, const std::string& text) {
    return "\n  " + (level ? std::string(2 * level, ' ') + "# " : std::string()) + text;
  }

  std::string statement(int level) {
    std::string out;
    if (level == 0 && chance(0.2)) out += "\n" + line(0, "# /models/blocks.py:" + std::to_string(uniform(1, 300)) + ": \t    x = f(x)  # why");
    switch (uniform(0, level ? 3 : 6)) {
      case 0: case 1: {  // one output with its type
        auto call_text = call();
        auto name = fresh("t");
        out += line(level, name + " = " + call_text + "  # " + name + ": " + quoted_type());
        break;
      }
      case 2: {  // several outputs, a type comment on some or none
        std::vector<std::string> outputs;
        auto call_text = call();
        std::string lhs = target(2, outputs);
        if (lhs == "_" || (outputs.size() == 1 && lhs == outputs[0])) lhs = "(" + lhs + ",)";
        std::string types;
        bool plain_tuple = lhs.size() > 2 && lhs.front() == '(' && lhs.find_first_of("[(_", 1) == std::string::npos &&
                           lhs.substr(lhs.size() - 2) != ",)";
        if (plain_tuple)  // only the printer's own form carries types
          for (const auto& o : outputs)
            if (chance(0.5)) types += (types.empty() ? "" : ", ") + o + ": " + quoted_type();
        out += line(level, lhs + " = " + call_text + (types.empty() ? "" : "  # " + types));
        break;
      }
      case 3: out += line(level, call()); break;
      case 4: {  // unpacking, long enough at times to be wrapped
        auto source = use();
        int n = uniform(1, 14);
        std::vector<std::string> names;
        for (int i = 0; i < n; ++i) names.push_back(fresh(chance(0.5) ? "t_some_parameter_" : "C"));
        std::vector<std::string> lines(1);
        std::vector<std::string> parts;
        for (const auto& nm : names) parts.push_back(nm + ", ");
        parts.push_back("= " + source);
        for (const auto& p : parts) {
          if (!lines.back().empty() && lines.back().size() + p.size() > 80) {
            lines.back() += "\\";
            lines.emplace_back();
          }
          lines.back() += p;
        }
        for (const auto& l : lines) out += line(level, l);
        for (const auto& nm : names)
          if (chance(0.7)) out += line(level, "# " + nm + ": " + quoted_type());
        return out;  // Thunder prints no subsymbols under an unpacking
      }
      case 5: out += line(level, "del " + use()); return out;
      default: {
        auto object = defined_.front();  // a parameter
        auto name = fresh("x");
        out += line(level, name + ": " + quoted_type() + " = " +
                               pick<std::string>({object + "[0]", object + "['key']", object + ".weight",
                                                  object + ".get_parameter('w')", "globals()['__function_obj']"}));
        return out;
      }
    }
    if (level < 3 && chance(0.4)) {
      const size_t visible = defined_.size();
      int children = uniform(1, 3);
      for (int i = 0; i < children; ++i) out += statement(level + 1);
      // What a subsymbol defines is its statement's own: the top level never reads it (trace.python()
      // prints no subsymbols, and a name read that nothing defines is refused).
      if (level == 0) defined_.resize(visible);
    }
    return out;
  }

  std::mt19937 rng_;
  std::vector<std::string> defined_;
  int counter_ = 0;
};

}  // namespace

TEST(ParserRoundTrip, GeneratedTracesObeyTheLaw) {
  TraceTextGenerator generate(20261201);
  for (int i = 0; i < 3000; ++i) {
    auto text = generate.trace();
    auto r = parse_trace(text);
    ASSERT_TRUE(r) << r.error->describe("generated") << "\n" << text;
    auto printed = print_trace(*r.trace);
    ASSERT_EQ(printed, text) << "trace " << i;
    auto again = parse_trace(printed);
    ASSERT_TRUE(again) << again.error->describe("reprint");
    ASSERT_EQ(print_trace(*again.trace), printed);
    PrintOptions top;
    top.depth = 0;
    auto python = print_trace(*r.trace, top);  // trace.python(): the top level alone reads back too
    auto top_level = parse_trace(python);
    ASSERT_TRUE(top_level) << top_level.error->describe("python()") << "\n" << python;
    ASSERT_EQ(print_trace(*top_level.trace), python);
  }
}
