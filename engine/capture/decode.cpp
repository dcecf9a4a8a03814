#include "capture/decode.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "format/parser.h"
#include "transforms/gradient_links.h"
#include "transforms/names.h"
#include "session/assess.h"

namespace tv::capture_detail {
namespace {

// What one decode needs besides the value at hand.
struct Context {
  int version = kCaptureVersion;  // the version the document was written in
  std::string model;              // /model/name
  // Version 5: the line table (/lines) the stages' texts are runs of, and the bytes of its first
  // i lines joined, each with its '\n' (line_ends[i]), to size a run without reading it.
  std::shared_ptr<const std::vector<std::string>> lines;
  std::vector<uint64_t> line_ends;
};

// A stored trace longer than this is refused: a few runs of a long line would otherwise make
// any amount of text from a small file.
constexpr uint64_t kMaxStoredTextBytes = uint64_t{256} << 20;

template <class T, class Fn>
std::vector<T> list_of(const Cursor& c, Fn&& element) {
  std::vector<T> out;
  size_t n = c.size();
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(element(c.at(i)));
  return out;
}

std::vector<std::string> strings(const Cursor& c) {
  return list_of<std::string>(c, [](const Cursor& e) { return e.string(); });
}

std::map<std::string, std::string> string_map(const Cursor& c) {
  c.expect_object();
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : c.json().items()) {
    Cursor e(value, c.path() + "/" + escape_pointer_token(key), c.file());
    out[key] = e.string();
  }
  return out;
}

std::vector<int64_t> shape(const Cursor& c) {
  return list_of<int64_t>(c, [](const Cursor& e) { return e.integer_at_least(0); });
}

DType dtype(const Cursor& c) {
  auto s = c.string();
  if (auto d = dtype_from_short(s)) return *d;
  c.fail("expected a dtype (f64, f32, f16, bf16, i64, i32, i16, i8, ui8, b8), found \"" + s.substr(0, 40) + "\"");
}

int64_t count(const Cursor& c, std::string_view key) { return c.field(key).integer_at_least(0); }

// ---- traces ----

void check_one_of(const Cursor& c, std::initializer_list<std::string_view> names, std::string_view what) {
  auto s = c.string();
  for (auto n : names)
    if (s == n) return;
  std::string list;
  for (auto n : names) list += (list.empty() ? "" : ", ") + std::string(n);
  c.fail("expected " + std::string(what) + " (" + list + "), found \"" + s.substr(0, 40) + "\"");
}

// A parameter's layout, by the name distribution_name() writes (only the two a transform sets).
Distribution distribution(const Cursor& c) {
  auto s = c.string();
  for (Distribution d : {Distribution::replicated, Distribution::fully_sharded})
    if (s == distribution_name(d)) return d;
  c.fail("expected a parameter layout (replicated, fully_sharded), found \"" + s.substr(0, 40) + "\"");
}

// Before version 4 a stage also stored its trace's structure, derived from the text (which is what
// a load uses); it was part of the format: check it all, without recursion, so a deeply nested hand
// edit cannot exhaust the stack.
void check_structure(const Cursor& s) {
  string_field(s, "function");
  auto params = s.field("params");
  for (size_t i = 0, n = params.size(); i < n; ++i) {
    auto p = params.at(i);
    string_field(p, "name");
    string_field(p, "type");
    check_one_of(p.field("kind"), {"positional", "varargs", "varkw"}, "a parameter kind");
    if (auto d = p.optional_field("distribution")) distribution(*d);
  }
  std::vector<Cursor> pending{s.field("bound_symbols")};
  while (!pending.empty()) {
    Cursor list = pending.back();
    pending.pop_back();
    for (size_t i = 0, n = list.size(); i < n; ++i) {
      auto b = list.at(i);
      string_field(b, "symbol");
      auto outputs = b.field("outputs");
      for (size_t k = 0, m = outputs.size(); k < m; ++k) {
        string_field(outputs.at(k), "name");
        string_field(outputs.at(k), "type");
      }
      strings(b.field("inputs"));
      if (auto h = b.optional_field("header")) h->string();
      if (auto subs = b.optional_field("subsymbols")) {
        subs->expect_array();
        pending.push_back(*subs);
      }
    }
  }
}

// Parameter layouts by name (replicated under ddp, fully_sharded under fsdp): the printed text does
// not show them.
using Layouts = std::vector<std::pair<std::string, Distribution>>;

// Before version 4: from the params of the stage's structure.
Layouts layouts_of_structure(const Cursor& structure) {
  Layouts out;
  auto params = structure.field("params");
  for (size_t i = 0, n = params.size(); i < n; ++i) {
    auto p = params.at(i);
    if (auto d = p.optional_field("distribution")) out.emplace_back(string_field(p, "name"), distribution(*d));
  }
  return out;
}

// Version 4: {"t_weight": "replicated", ...}.
Layouts layouts_of(const Cursor& c) {
  c.expect_object();
  Layouts out;
  for (const auto& [key, value] : c.json().items())
    out.emplace_back(key, distribution(Cursor(value, c.path() + "/" + escape_pointer_token(key), c.file())));
  return out;
}

// A statement's index in walk order -> a string: the forward <-> backward links ({"<walk index>":
// "<forward key>"}, transforms/gradient_links.h) and the source lines the headers do not imply
// ({"<walk index>": "<location>"}, ir/source_location.h).
using Indexed = std::vector<std::pair<size_t, std::string>>;

Indexed indexed_strings(const Cursor& c, const char* what, bool allow_empty) {
  c.expect_object();
  Indexed out;
  for (const auto& [key, value] : c.json().items()) {
    Cursor entry(value, c.path() + "/" + escape_pointer_token(key), c.file());
    // At most 18 digits: every such number fits in size_t, so stoull cannot throw.
    if (key.empty() || key.size() > 18 || key.find_first_not_of("0123456789") != std::string::npos)
      entry.fail("expected a statement index (digits) as the key, found \"" + key.substr(0, 40) + "\"");
    std::string text = entry.string();
    if (text.empty() && !allow_empty) entry.fail(std::string("expected ") + what + ", found \"\"");
    out.emplace_back(static_cast<size_t>(std::stoull(key)), std::move(text));
  }
  return out;
}

struct StageExtras {  // what a stage stores beside its text, applied when the text is first parsed
  Layouts layouts;
  Indexed links, sources;
  std::string links_path, sources_path;
};

void apply_sources(Trace& t, const Indexed& overrides) {
  auto all = implied_sources(t);  // what the parser set
  for (const auto& [index, location] : overrides) {
    if (index >= all.size())
      throw std::out_of_range("statement " + std::to_string(index) + " is past the trace's " +
                              std::to_string(all.size()) + " statements");
    all[index] = make_source(location);
  }
  set_sources(t, all);
}

// Version 5's /lines: each distinct line of the stored texts once.
void read_line_table(const Cursor& c, Context& ctx) {
  auto table = std::make_shared<std::vector<std::string>>();
  const size_t n = c.size();
  if (n > UINT32_MAX) c.fail("more lines than a capture can hold (at most 4294967295)");
  table->reserve(n);
  ctx.line_ends.assign(1, 0);
  ctx.line_ends.reserve(n + 1);
  for (size_t i = 0; i < n; ++i) {
    table->push_back(c.at(i).take_string());
    ctx.line_ends.push_back(ctx.line_ends.back() + table->back().size() + 1);
  }
  ctx.lines = std::move(table);
}

// A stage's text as runs of the line table: [first, count, first, count, ...].
StoredLines runs_of_line_table(const Cursor& c, const Context& ctx) {
  StoredLines out;
  out.table = ctx.lines;
  const uint64_t table_size = ctx.lines->size();
  uint64_t bytes = 0;
  const size_t n = c.size();
  if (n % 2 != 0)
    c.fail("expected pairs of integers (first line, count), found " + std::to_string(n) + " integers");
  // Read straight from the document: a cursor (and its path) is made only to report a problem.
  auto integer = [&](size_t i, uint64_t min) {
    const Json& v = c.json()[i];
    if (v.is_number_unsigned() && v.get<uint64_t>() >= min && v.get<uint64_t>() <= INT64_MAX) return v.get<uint64_t>();
    return static_cast<uint64_t>(c.at(i).integer_at_least(static_cast<int64_t>(min)));
  };
  out.runs.reserve(n / 2);
  for (size_t i = 0; i < n; i += 2) {
    const uint64_t first = integer(i, 0), count = integer(i + 1, 1);
    if (count > table_size || first > table_size - count)
      c.at(i).fail("lines " + std::to_string(first) + " to " + std::to_string(first + count - 1) +
                   " are past the end of /lines (" + std::to_string(table_size) + " lines)");
    bytes += ctx.line_ends[first + count] - ctx.line_ends[first];
    if (bytes > kMaxStoredTextBytes + 1)
      c.at(i).fail("the stored trace is longer than " + std::to_string(kMaxStoredTextBytes >> 20) +
                   " MiB; the capture is damaged (edited or cut): make it again with the command that wrote it");
    out.runs.push_back({static_cast<uint32_t>(first), static_cast<uint32_t>(count)});
  }
  return out;
}

// Where a stage keeps its trace's text: version 5 writes runs of the line table (`lines`); a text
// stored whole (`text`) is what versions before 5 wrote and what a hand edit may write. Null: a
// stage without a trace. `member` is set to the one read.
std::optional<StoredLines> stored_lines(const Cursor& stage, const Context& ctx, std::optional<Cursor>& member) {
  const bool whole = ctx.version < 5 || (stage.json().is_object() && stage.json().contains("text"));
  if (ctx.version >= 5 && whole && stage.json().contains("lines"))
    stage.field("text").fail("a stage stores its trace as \"lines\" or as \"text\", not both");
  member = stage.field(whole ? "text" : "lines");
  if (member->json().is_null()) return std::nullopt;
  if (whole) return StoredLines::of_text(member->take_string());
  return runs_of_line_table(*member, ctx);
}

// The stored text, parsed when the stage is first read. The parser made one proxy per name, shared
// by every use and owned by this trace alone, so setting a layout on the parameter's proxy sets it
// everywhere; the trace is this stage's alone, so the links are set on it.
StageTrace stored_trace(StoredLines lines, const Cursor& member, StageExtras extras) {
  return StageTrace::stored(
      std::move(lines), [file = member.file(), path = member.path(), extras = std::move(extras)](const std::string& source) {
        auto r = parse_trace(source);
        if (!r.trace) {
          int line = r.error ? r.error->line : 0, column = r.error ? r.error->column : 0;
          std::string message = r.error ? r.error->message : "unknown parse error";
          throw CaptureError(file, path,
                             "the stored trace does not parse: line " + std::to_string(line) + ", column " +
                                 std::to_string(column) + ": " + message +
                                 "; the capture is damaged (edited or cut): make it again with the command that wrote it",
                             line, column);
        }
        Trace& trace = const_cast<Trace&>(*r.trace);
        for (const auto& [name, layout] : extras.layouts)
          for (const auto& param : trace.params)
            if (param.proxy->name == name) const_cast<Proxy&>(*param.proxy).distribution = layout;
        try {
          if (!extras.links.empty()) set_gradient_links(trace, extras.links);
        } catch (const std::out_of_range& e) {
          throw CaptureError(file, extras.links_path, e.what());
        }
        try {
          if (!extras.sources.empty()) apply_sources(trace, extras.sources);
        } catch (const std::out_of_range& e) {
          throw CaptureError(file, extras.sources_path, e.what());
        }
        return r.trace;
      });
}

Stage stage(const Cursor& c, const Context& ctx) {
  Stage s;
  s.pass = string_field(c, "pass");
  s.milliseconds = number_field(c, "milliseconds");
  s.changed = bool_field(c, "changed");
  if (auto f = c.optional_field("failed_at")) s.failed_at = static_cast<int>(f->integer_at_least(0));
  std::optional<Cursor> member;
  std::optional<StoredLines> lines = stored_lines(c, ctx, member);
  const bool has_text = lines.has_value();
  StageExtras extras;
  Layouts& layouts = extras.layouts;
  if (ctx.version >= 4) {
    if (auto d = c.optional_field("distributions")) layouts = layouts_of(*d);
  } else if (ctx.version >= 1) {
    auto structure = c.field("structure");
    if (!structure.json().is_null()) {
      check_structure(structure);
      layouts = layouts_of_structure(structure);
    } else if (has_text) {
      structure.fail_expected("an object (the trace's structure)");
    }
  }
  if (auto l = c.optional_field("gradient_of")) {
    extras.links = indexed_strings(*l, "the name of a forward statement's output", false);
    extras.links_path = l->path();
  }
  if (auto l = c.optional_field("sources")) {
    extras.sources = indexed_strings(*l, "a source location", true);
    extras.sources_path = l->path();
  }
  if (lines) s.trace = stored_trace(std::move(*lines), *member, std::move(extras));
  return s;
}

StageHistory stages_v1(const Cursor& c, const Context& ctx) {
  StageHistory h;
  c.expect_object();
  for (auto k : kTraceKinds) {
    auto list = c.field(trace_kind_name(k));
    h.of(k) = list_of<Stage>(list, [&](const Cursor& e) { return stage(e, ctx); });
  }
  return h;
}

// Version 0: one flat list, each stage naming its kind.
StageHistory stages_v0(const Cursor& c, const Context& ctx) {
  StageHistory h;
  for (size_t i = 0, n = c.size(); i < n; ++i) {
    auto e = c.at(i);
    auto kind_cursor = e.field("kind");
    TraceKind kind;
    if (!parse_trace_kind(kind_cursor.string(), &kind))
      kind_cursor.fail("expected a trace kind (prologue, forward, backward, epilogue), found \"" +
                       kind_cursor.string().substr(0, 40) + "\"");
    h.of(kind).push_back(stage(e, ctx));
  }
  return h;
}

// ---- replay, comparisons, rules ----

TensorStats tensor_stats(const Cursor& c) {
  TensorStats s;
  s.shape = shape(c.field("shape"));
  s.dtype = dtype(c.field("dtype"));
  s.min = number_field(c, "min");
  s.max = number_field(c, "max");
  s.mean = number_field(c, "mean");
  s.nan_count = count(c, "nan_count");
  s.inf_count = count(c, "inf_count");
  return s;
}

TensorCheck tensor_check(const Cursor& c) {
  TensorCheck t;
  t.name = string_field(c, "name");
  t.stats = tensor_stats(c.field("stats"));
  t.max_abs = number_field(c, "max_abs");
  t.max_rel = number_field(c, "max_rel");
  t.tolerance = number_field(c, "tolerance");
  t.pass = bool_field(c, "pass");
  if (auto r = c.optional_field("reference")) t.reference = tensor_stats(*r);  // absent before 2026-12-03
  if (auto p = c.optional_field("proxy")) t.proxy = p->string();
  return t;
}

SymbolTiming timing(const Cursor& c) {
  SymbolTiming t;
  t.trace = string_field(c, "trace");
  t.index = static_cast<int>(c.field("index").integer_at_least(0));
  if (t.index != c.field("index").integer()) c.field("index").fail("index is out of range");
  t.symbol = string_field(c, "symbol");
  t.output = string_field(c, "output");
  t.microseconds = number_field(c, "microseconds");
  t.device_timer = bool_field(c, "device_timer");
  if (auto s = c.optional_field("start_microseconds")) t.start_microseconds = s->number();  // absent before 2026-11-29
  return t;
}

RankResult rank_result(const Cursor& c) {
  RankResult r;
  r.rank = int_field(c, "rank");
  r.outputs = list_of<TensorCheck>(c.field("outputs"), tensor_check);
  r.gradients = list_of<TensorCheck>(c.field("gradients"), tensor_check);
  auto proxies = c.field("proxies");
  proxies.expect_object();
  for (const auto& [name, value] : proxies.json().items())
    r.proxies[name] = tensor_stats(Cursor(value, proxies.path() + "/" + escape_pointer_token(name), c.file()));
  r.timings = list_of<SymbolTiming>(c.field("timings"), timing);
  r.first_non_finite = string_field(c, "first_non_finite");
  r.error = string_field(c, "error");
  if (auto g = c.optional_field("cuda_graph")) {  // only when the replay ran the step as a CUDA graph
    CudaGraphRun run;
    run.ran = bool_field(*g, "ran");
    run.steps = int_field(*g, "steps");
    run.step_ms = number_field(*g, "step_ms");
    run.graph_ms = number_field(*g, "graph_ms");
    run.max_abs_difference = number_field(*g, "max_abs_difference");
    auto relative = g->optional_field("max_relative_difference");  // absent in older captures
    run.max_relative_difference = relative ? number_field(*g, "max_relative_difference") : run.max_abs_difference;
    run.error = string_field(*g, "error");
    r.cuda_graph = run;
  }
  return r;
}

Replay replay(const Cursor& c) {
  Replay r;
  r.ranks = list_of<RankResult>(c.field("ranks"), rank_result);
  return r;
}

int pipeline_index(const Cursor& c, size_t pipelines) {
  int64_t i = c.integer();
  if (i < 0 || static_cast<size_t>(i) >= pipelines)
    c.fail("expected the index of a pipeline (0 to " + std::to_string(static_cast<int64_t>(pipelines) - 1) +
           "), found " + std::to_string(i));
  return static_cast<int>(i);
}

Verdict verdict(const Cursor& c) {
  auto s = c.string();
  Verdict v;
  if (!parse_verdict(s, &v))
    c.fail("expected a verdict (equivalent, different, not comparable), found \"" + s.substr(0, 40) + "\"");
  return v;
}

Outcome outcome(const Cursor& c) {
  auto s = c.string();
  Outcome o;
  if (!parse_outcome(s, &o)) c.fail("expected an outcome (passed, failed, refused), found \"" + s.substr(0, 40) + "\"");
  return o;
}

// A rules cell's verdict before version 2: equivalent, different, illegal (refused) or failed.
void cell_verdict_v1(const Cursor& c, RuleCell& cell) {
  auto s = c.string();
  if (s == "illegal" || s == "failed") {
    cell.verdict = Verdict::not_comparable;
    // capture-at-jit's reproduced failure was shown as illegal: it is a failed run.
    cell.outcome = s == "illegal" && cell.semantics == "lazy" ? Outcome::refused : Outcome::failed;
    return;
  }
  if (!parse_verdict(s, &cell.verdict))
    c.fail("expected a verdict (equivalent, different, illegal, failed), found \"" + s.substr(0, 40) + "\"");
}

PipelineOutcome pipeline_outcome(const Cursor& c) {
  PipelineOutcome o;
  o.kind = outcome(c.field("kind"));
  o.rule = string_field(c, "rule");
  o.reasons = strings(c.field("reasons"));
  return o;
}

Comparison comparison(const Cursor& c, size_t pipelines, const Context& ctx) {
  Comparison out;
  out.left = pipeline_index(c.field("left"), pipelines);
  out.right = pipeline_index(c.field("right"), pipelines);
  out.stages = list_of<StageComparison>(c.field("stages"), [](const Cursor& e) {
    StageComparison s;
    s.kind = string_field(e, "kind");
    s.stage = int_field(e, "stage");
    s.left_pass = string_field(e, "left_pass");
    s.right_pass = string_field(e, "right_pass");
    s.equal = bool_field(e, "equal");
    return s;
  });
  out.numbers = list_of<NumericComparison>(c.field("numbers"), [](const Cursor& e) {
    NumericComparison n;
    n.rank = int_field(e, "rank");
    n.name = string_field(e, "name");
    n.max_abs = number_field(e, "max_abs");
    n.max_rel = number_field(e, "max_rel");
    n.pass = bool_field(e, "pass");
    return n;
  });
  out.traces_equal = bool_field(c, "traces_equal");
  out.numbers_equal = bool_field(c, "numbers_equal");
  // Before version 2 the verdict was recomputed on load (session/assess.h), so it is not read.
  if (ctx.version >= 2) {
    out.verdict = verdict(c.field("verdict"));
    out.why = string_field(c, "why");
  }
  return out;
}

RulesMatrix rules(const Cursor& c, const Context& ctx) {
  RulesMatrix m;
  m.model = string_field(c, "model");
  m.world_size = int_field(c, "world_size");
  m.transforms = strings(c.field("transforms"));
  if (auto s = c.optional_field("semantics")) m.semantics = strings(*s);
  m.cells = list_of<RuleCell>(c.field("cells"), [&](const Cursor& e) {
    RuleCell cell;
    cell.order = strings(e.field("order"));
    // Optional (added within version 1): the order it was compared with, and the mode.
    if (auto v = e.optional_field("versus")) cell.versus = strings(*v);
    if (auto m = e.optional_field("semantics")) cell.semantics = m->string();
    // Before version 3 the only other mode was capture-at-jit, which is thunder-2024-03.
    if (auto m = e.optional_field("capture_at_jit"); m && m->boolean()) cell.semantics = "thunder-2024-03";
    if (ctx.version >= 2) {
      cell.verdict = verdict(e.field("verdict"));
      cell.outcome = outcome(e.field("outcome"));
    } else {
      cell_verdict_v1(e.field("verdict"), cell);
    }
    cell.rule = string_field(e, "rule");
    cell.detail = string_field(e, "detail");
    return cell;
  });
  m.explanations = string_map(c.field("explanations"));
  if (!c.optional_field("semantics")) {  // before version 3: the modes its cells were computed in
    m.semantics = {"lazy"};
    for (const auto& cell : m.cells)
      if (std::find(m.semantics.begin(), m.semantics.end(), cell.semantics) == m.semantics.end())
        m.semantics.push_back(cell.semantics);
  }
  return m;
}

// ---- model and pipelines ----

ModelRecord model(const Cursor& c) {
  ModelRecord m;
  m.name = string_field(c, "name");
  m.params = string_map(c.field("params"));
  m.parameters = list_of<ParameterRecord>(c.field("parameters"), [](const Cursor& e) {
    ParameterRecord p;
    p.name = string_field(e, "name");
    p.shape = shape(e.field("shape"));
    p.dtype = dtype(e.field("dtype"));
    return p;
  });
  if (auto t = c.optional_field("tensors")) {  // absent before 2026-12-03
    m.tensors = t->string();
    if (m.tensors.empty() || m.tensors.find('/') != std::string::npos || m.tensors == "." || m.tensors == "..")
      t->fail("must name a file beside the capture (no folder)");
  }
  return m;
}

// The names of an order must be transforms this tool has, unless the order names what another
// tool ran: Lightning Thunder's (a Python attach of a ThunderModule records "thunder.jit" and its
// transforms' class names) or a folder of imported printouts (the model "imported": its case names).
void check_order(const Cursor& order, const std::vector<std::string>& names, const Context& ctx) {
  if (ctx.model == "imported" || (!names.empty() && names.front().rfind("thunder.", 0) == 0)) return;
  const auto& known = kBuiltinTransformNames;
  for (size_t i = 0; i < names.size(); ++i) {
    if (std::find(known.begin(), known.end(), names[i]) != known.end()) continue;
    std::string valid;
    for (const auto& k : known) valid += (valid.empty() ? "" : ", ") + std::string(k);
    order.at(i).fail("unknown transform '" + names[i] + "'; valid transforms: " + valid +
                     " (the capture was edited or is damaged: make it again)");
  }
}

PipelineSpec spec(const Cursor& c, const Context& ctx) {
  PipelineSpec s;
  s.order = strings(c.field("order"));
  check_order(c.field("order"), s.order, ctx);
  if (ctx.version >= 3) {
    s.semantics = string_field(c, "semantics");
    s.workaround = string_field(c, "workaround");
  } else if (bool_field(c, "capture_at_jit")) {
    s.semantics = "thunder-2024-03";  // capture-at-jit reproduced that mode
  }
  // Range-checked before it is narrowed: 4294967298 must not become 2.
  const int64_t world = c.field("world_size").integer_at_least(1);
  if (world > (1 << 20))
    c.field("world_size").fail("world size " + std::to_string(world) + " is out of range (at most " +
                               std::to_string(1 << 20) + ")");
  s.world_size = static_cast<int>(world);
  if (auto g = c.optional_field("shard_group")) {
    const int64_t group = g->integer_at_least(1);
    if (group > world || world % group != 0)
      g->fail("shard group of " + std::to_string(group) + " ranks does not divide the world of " + std::to_string(world));
    s.shard_group = static_cast<int>(group);
  }
  s.device = string_field(c, "device");
  return s;
}

// Each replayed rank is a rank of the pipeline's world, once. Fewer ranks than the world is no
// disagreement: a pipeline that failed while building has none, and one process of a launch
// records its own rank alone.
void check_replay_ranks(const Cursor& ranks, const Replay& replay, int world_size) {
  std::vector<bool> seen(static_cast<size_t>(world_size), false);
  for (size_t i = 0; i < replay.ranks.size(); ++i) {
    const int rank = replay.ranks[i].rank;
    if (rank < 0 || rank >= world_size)
      ranks.at(i).field("rank").fail("rank " + std::to_string(rank) + " is not a rank of the pipeline's world of " +
                                     std::to_string(world_size) + " (/spec/world_size disagrees with the replay)");
    if (seen[static_cast<size_t>(rank)]) ranks.at(i).field("rank").fail("rank " + std::to_string(rank) + " is replayed twice");
    seen[static_cast<size_t>(rank)] = true;
  }
}

PipelineRecord pipeline(const Cursor& c, const Context& ctx) {
  PipelineRecord p;
  p.spec = spec(c.field("spec"), ctx);
  p.error = string_field(c, "error");
  p.rule = string_field(c, "rule");
  auto stages = c.field("stages");
  p.stages = ctx.version == 0 ? stages_v0(stages, ctx) : stages_v1(stages, ctx);
  if (auto r = c.optional_field("replay")) {
    p.replay = replay(*r);
    check_replay_ranks(r->field("ranks"), *p.replay, p.spec.world_size);
  }
  if (ctx.version >= 2) p.outcome = pipeline_outcome(c.field("outcome"));
  return p;
}

int document_version(const Cursor& root) {
  auto format = root.field("format");
  if (!format.json().is_string() || format.json().get_ref<const std::string&>() != kCaptureFormat) {
    if (!format.json().is_string()) format.fail_expected("the string \"" + std::string(kCaptureFormat) + "\"");
    format.fail("expected \"" + std::string(kCaptureFormat) + "\", found \"" + format.string().substr(0, 40) +
                "\": not a thunder-viz capture");
  }
  auto v = root.field("version");
  int version = v.integer32();
  if (version > kCaptureVersion)
    v.fail("this capture was written by a newer thunder-viz (version " + std::to_string(version) + " > " +
           std::to_string(kCaptureVersion) + "); upgrade the tool");
  if (version < kOldestCaptureVersion)
    v.fail("unknown capture version " + std::to_string(version) + " (this tool reads versions " +
           std::to_string(kOldestCaptureVersion) + " to " + std::to_string(kCaptureVersion) + ")");
  return version;
}

}  // namespace

Capture decode_capture(Json document, const std::string& file) {
  Cursor root(document, "", file);
  if (!document.is_object()) root.fail_expected("an object (a thunder-viz capture)");
  Context ctx;
  ctx.version = document_version(root);

  Capture c;
  c.version = kCaptureVersion;
  c.loaded_from_version = ctx.version;
  c.tool_version = string_field(root, "tool_version");
  c.model = model(root.field("model"));
  ctx.model = c.model.name;
  if (ctx.version >= 5) read_line_table(root.field("lines"), ctx);
  c.pipelines = list_of<PipelineRecord>(root.field("pipelines"), [&](const Cursor& e) { return pipeline(e, ctx); });
  c.comparisons = list_of<Comparison>(root.field("comparisons"),
                                      [&](const Cursor& e) { return comparison(e, c.pipelines.size(), ctx); });
  if (auto r = root.optional_field("rules")) c.rules = rules(*r, ctx);
  if (ctx.version < 2) assess(c);  // outcomes and verdicts were not stored
  return c;
}

}  // namespace tv::capture_detail
