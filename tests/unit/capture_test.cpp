// Capture files: a realistic capture survives save and load (traces reprint identically, numbers
// are equal bit for bit), the document matches docs/capture.schema.json, every kind of bad file
// gives a CaptureError with a JSON path (never a crash, checked on 10 000 mutated documents), and
// saves are atomic: a save killed half-way, or one that cannot write, leaves the old file intact.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <poll.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "capture/atomic_file.h"
#include "capture/capture.h"
#include "format/parser.h"
#include "format/printer.h"
#include "session/assess.h"
#include "session/run.h"
#include "transforms/gradient_links.h"
#include "transforms/source_provenance.h"
#include "test_util.h"

using namespace tv;
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using tv::testing::read_file;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// A fresh folder per test, removed at the end.
struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/tv_capture_test_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

TracePtr fixture(const std::string& name) {
  auto r = parse_trace(read_file(fs::path(TV_FIXTURES_DIR) / name));
  if (!r) ADD_FAILURE() << name << ": " << r.error->describe(name);
  return r.trace;
}

// The stage history Thunder printed for `model` (linear, mlp, ddp_jit_then_ddp).
StageHistory fixture_history(const std::string& model) {
  StageHistory h;
  const std::pair<TraceKind, const char*> kinds[] = {{TraceKind::prologue, "prologue"},
                                                     {TraceKind::forward, "fwd"},
                                                     {TraceKind::backward, "bwd"},
                                                     {TraceKind::epilogue, "epilogue"}};
  for (auto [kind, tag] : kinds)
    for (int i = 0;; ++i) {
      char name[128];
      std::snprintf(name, sizeof name, "%s__%s__%02d.txt", model.c_str(), tag, i);
      if (!fs::exists(fs::path(TV_FIXTURES_DIR) / name)) break;
      auto t = fixture(name);
      if (!t) break;
      std::string pass = t->provenance ? t->provenance->pass : "acquisition";
      double ms = t->provenance && t->provenance->milliseconds ? double(*t->provenance->milliseconds) : 0.1 * i;
      h.record(kind, pass, t, ms);
    }
  return h;
}

TensorStats stats(std::vector<int64_t> shape, double min, double max, double mean, int64_t nans = 0, int64_t infs = 0) {
  TensorStats s;
  s.shape = std::move(shape);
  s.min = min;
  s.max = max;
  s.mean = mean;
  s.nan_count = nans;
  s.inf_count = infs;
  return s;
}

Replay replay_of(int world) {
  Replay r;
  for (int rank = 0; rank < world; ++rank) {
    RankResult rr;
    rr.rank = rank;
    rr.outputs.push_back({"output[0]", stats({2, 10}, -1.2345678901234567, 0.1 + 0.2, 1e-300), 3.5e-7, 1.25e-6, 1e-5, true});
    rr.gradients.push_back({"grad[weight]", stats({10, 5}, -kInf, kNaN, kNaN, 3, 1), kNaN, kInf, 1e-5, false});
    rr.proxies["t16"] = stats({2, 10}, -2, 2, 0.0078125);
    rr.proxies["weird/name~0"] = stats({}, 1, 1, 1);
    rr.proxies["t16"].dtype = DType::bf16;
    rr.timings.push_back({"forward", 1, "torch.nn.functional.linear", "t16", 12.75, rank == 1});
    rr.timings.push_back({"backward", 3, "prims.matmul", "", 1.0 / 3.0, false});
    rr.first_non_finite = rank == 1 ? "t3 = prims.div(a, b)" : "";
    rr.error = rank == 1 ? "rank 1: collective timed out after 30 s" : "";
    r.ranks.push_back(std::move(rr));
  }
  return r;
}

RulesMatrix rules_matrix() {
  RulesMatrix m;
  m.model = "linear";
  m.world_size = 2;
  m.transforms = {"jit", "ddp", "fsdp"};
  m.semantics = {"lazy", "thunder-2024-03"};
  auto cell = [](std::vector<std::string> order, std::vector<std::string> versus, bool at_jit, Verdict verdict,
                 Outcome outcome, std::string rule, std::string detail) {
    RuleCell c;
    c.order = std::move(order);
    c.versus = std::move(versus);
    c.semantics = at_jit ? "thunder-2024-03" : "lazy";
    c.verdict = verdict;
    c.outcome = outcome;
    c.rule = std::move(rule);
    c.detail = std::move(detail);
    return c;
  };
  m.cells.push_back(cell({"jit", "ddp"}, {"ddp", "jit"}, false, Verdict::equivalent, Outcome::passed, "",
                         "canonically equal traces, equal numbers"));
  m.cells.push_back(cell({"jit", "ddp"}, {"ddp", "jit"}, true, Verdict::not_comparable, Outcome::failed,
                         "state-read-at-jit", "ValueError: None had an unexpected type <class 'NoneType'>"));
  m.cells.push_back(cell({"ddp", "fsdp"}, {"fsdp", "ddp"}, false, Verdict::not_comparable, Outcome::refused,
                         "one-parameter-distribution", "ddp and fsdp both claim the parameters; apply one of them"));
  m.cells.push_back(cell({"fsdp", "jit", "ddp"}, {}, false, Verdict::not_comparable, Outcome::failed, "", "rank 1 died"));
  m.cells.push_back(cell({"jit", "fsdp"}, {"fsdp", "jit"}, false, Verdict::different, Outcome::passed, "",
                         "2 statements differ"));
  m.explanations["one-parameter-distribution"] = "A parameter is laid out by one transform only.";
  return m;
}

Capture realistic_capture() {
  Capture c;
  c.tool_version = "0.1.0-test";
  c.model.name = "linear";
  c.model.params = {{"in", "5"}, {"out", "10"}, {"bias", "false"}};
  c.model.parameters.push_back({"weight", {10, 5}, DType::f32});
  c.model.parameters.push_back({"fc1.bias", {10}, DType::bf16});

  PipelineRecord a;
  a.spec.order = {"jit"};
  a.spec.device = "cuda:0";
  a.stages = fixture_history("linear");
  a.replay = replay_of(1);
  c.pipelines.push_back(std::move(a));

  PipelineRecord b;
  b.spec.order = {"jit", "ddp"};
  b.spec.world_size = 2;
  b.spec.device = "cpu";
  b.stages = fixture_history("ddp_jit_then_ddp");
  b.replay = replay_of(2);
  c.pipelines.push_back(std::move(b));

  PipelineRecord refused;
  refused.spec.order = {"jit", "ddp"};
  refused.spec.semantics = "thunder-2024-03";
  refused.spec.world_size = 2;
  refused.error = "ValueError: None had an unexpected type <class 'NoneType'>.\nSupported types: \"ProcessGroup\"";
  refused.rule = "state-read-at-call";
  refused.stages = fixture_history("ddp_jit_then_ddp");
  refused.stages.backward.back().failed_at = 1;  // a pass that stopped keeps its partial trace
  refused.outcome = {Outcome::failed, "state-read-at-call", {"ValueError: None had an unexpected type"}};
  c.pipelines.push_back(std::move(refused));

  Comparison cmp;
  cmp.left = 0;
  cmp.right = 1;
  cmp.stages.push_back({"forward", 6, "Delete Last Used", "Delete Last Used", false});
  cmp.numbers.push_back({0, "output[0]", 0.0, 1e-7, true});
  cmp.numbers.push_back({1, "grad[weight]", kInf, kNaN, false});
  cmp.verdict = Verdict::different;
  cmp.why = "numbers differ";
  c.comparisons.push_back(cmp);
  c.rules = rules_matrix();
  return c;
}

// A smaller capture (one pipeline) for the fuzz test, where each load should be quick.
Capture small_capture() {
  Capture c = realistic_capture();
  c.pipelines.resize(1);
  auto& fwd = c.pipelines[0].stages.forward;
  fwd.erase(fwd.begin() + 2, fwd.end() - 1);
  c.comparisons.clear();
  return c;
}

Json doc_of(const Capture& c) { return Json::parse(capture_to_json(c)); }

// A stage's text: its runs of the document's line table, joined (version 5).
std::string stage_text(const Json& doc, const Json& stage) {
  std::string out;
  const Json& runs = stage["lines"];
  for (size_t r = 0; r + 1 < runs.size(); r += 2)
    for (size_t i = runs[r].get<size_t>(), end = i + runs[r + 1].get<size_t>(); i < end; ++i)
      out += doc["lines"][i].get<std::string>() + "\n";
  if (!out.empty()) out.pop_back();
  return out;
}

// The document as version 4 wrote it: each stage's text whole, no line table.
Json as_version_4(const Json& current) {
  Json d = current;
  d["version"] = 4;
  for (auto& p : d["pipelines"])
    for (auto& [kind, list] : p["stages"].items())
      for (auto& stage : list) {
        Json text = stage["lines"].is_null() ? Json(nullptr) : Json(stage_text(current, stage));
        Json whole = Json::object();
        for (auto& [k, v] : stage.items()) whole[k == "lines" ? "text" : k] = k == "lines" ? text : v;
        stage = whole;
      }
  d.erase("lines");
  return d;
}

// The error that loading `text` gives; fails the test when it loads.
CaptureError error_of(const std::string& text, const std::string& name = "bad.tvz.json") {
  try {
    capture_from_json(text, name);
  } catch (const CaptureError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a CaptureError";
  return CaptureError(name, "", "none");
}

std::string contents(const std::string& path) { return read_file(path); }

bool same_number(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

void expect_same_stats(const TensorStats& a, const TensorStats& b) {
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_TRUE(same_number(a.min, b.min)) << a.min << " vs " << b.min;
  EXPECT_TRUE(same_number(a.max, b.max)) << a.max << " vs " << b.max;
  EXPECT_TRUE(same_number(a.mean, b.mean)) << a.mean << " vs " << b.mean;
  EXPECT_EQ(a.nan_count, b.nan_count);
  EXPECT_EQ(a.inf_count, b.inf_count);
}

void expect_same_checks(const std::vector<TensorCheck>& a, const std::vector<TensorCheck>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    expect_same_stats(a[i].stats, b[i].stats);
    EXPECT_TRUE(same_number(a[i].max_abs, b[i].max_abs));
    EXPECT_TRUE(same_number(a[i].max_rel, b[i].max_rel));
    EXPECT_TRUE(same_number(a[i].tolerance, b[i].tolerance));
    EXPECT_EQ(a[i].pass, b[i].pass);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Round trip

TEST(CaptureRoundTrip, RealisticCaptureSurvivesSaveAndLoad) {
  TempDir dir;
  Capture original = realistic_capture();
  const auto& lin = original.pipelines[0].stages;
  ASSERT_EQ(lin.prologue.size(), 2u);
  ASSERT_EQ(lin.forward.size(), 7u);
  ASSERT_EQ(lin.backward.size(), 1u);
  ASSERT_EQ(lin.epilogue.size(), 1u);

  auto path = dir.file("run.tvz.json");
  save_capture(original, path);
  Capture loaded = load_capture(path);

  EXPECT_EQ(loaded.version, kCaptureVersion);
  EXPECT_EQ(loaded.loaded_from_version, kCaptureVersion);
  EXPECT_EQ(loaded.tool_version, original.tool_version);
  EXPECT_EQ(loaded.model.name, "linear");
  EXPECT_EQ(loaded.model.params, original.model.params);
  ASSERT_EQ(loaded.model.parameters.size(), 2u);
  EXPECT_EQ(loaded.model.parameters[1].name, "fc1.bias");
  EXPECT_EQ(loaded.model.parameters[1].shape, std::vector<int64_t>{10});
  EXPECT_EQ(loaded.model.parameters[1].dtype, DType::bf16);

  ASSERT_EQ(loaded.pipelines.size(), original.pipelines.size());
  for (size_t p = 0; p < original.pipelines.size(); ++p) {
    const auto& a = original.pipelines[p];
    const auto& b = loaded.pipelines[p];
    EXPECT_EQ(a.spec.order, b.spec.order);
    EXPECT_EQ(a.spec.semantics, b.spec.semantics);
    EXPECT_EQ(a.spec.workaround, b.spec.workaround);
    EXPECT_EQ(a.spec.world_size, b.spec.world_size);
    EXPECT_EQ(a.spec.device, b.spec.device);
    EXPECT_EQ(a.error, b.error);
    EXPECT_EQ(a.rule, b.rule);
    for (auto k : kTraceKinds) {
      const auto& sa = a.stages.of(k);
      const auto& sb = b.stages.of(k);
      ASSERT_EQ(sa.size(), sb.size()) << trace_kind_name(k);
      for (size_t i = 0; i < sa.size(); ++i) {
        EXPECT_EQ(sa[i].pass, sb[i].pass);
        EXPECT_EQ(sa[i].milliseconds, sb[i].milliseconds);
        EXPECT_EQ(sa[i].changed, sb[i].changed);
        EXPECT_EQ(sa[i].failed_at, sb[i].failed_at);
        ASSERT_TRUE(sb[i].trace);
        // Real traces: they reprint identically at every depth.
        EXPECT_EQ(print_trace(*sa[i].trace), print_trace(*sb[i].trace));
        PrintOptions top;
        top.depth = 0;
        EXPECT_EQ(print_trace(*sa[i].trace, top), print_trace(*sb[i].trace, top));
        EXPECT_EQ(sa[i].trace->params.size(), sb[i].trace->params.size());
      }
    }
    ASSERT_EQ(a.replay.has_value(), b.replay.has_value());
    if (a.replay) {
      ASSERT_EQ(a.replay->ranks.size(), b.replay->ranks.size());
      for (size_t r = 0; r < a.replay->ranks.size(); ++r) {
        const auto& ra = a.replay->ranks[r];
        const auto& rb = b.replay->ranks[r];
        EXPECT_EQ(ra.rank, rb.rank);
        expect_same_checks(ra.outputs, rb.outputs);
        expect_same_checks(ra.gradients, rb.gradients);
        ASSERT_EQ(ra.proxies.size(), rb.proxies.size());
        for (const auto& [name, s] : ra.proxies) {
          ASSERT_TRUE(rb.proxies.count(name)) << name;
          expect_same_stats(s, rb.proxies.at(name));
        }
        ASSERT_EQ(ra.timings.size(), rb.timings.size());
        for (size_t t = 0; t < ra.timings.size(); ++t) {
          EXPECT_EQ(ra.timings[t].trace, rb.timings[t].trace);
          EXPECT_EQ(ra.timings[t].index, rb.timings[t].index);
          EXPECT_EQ(ra.timings[t].symbol, rb.timings[t].symbol);
          EXPECT_EQ(ra.timings[t].output, rb.timings[t].output);
          EXPECT_EQ(ra.timings[t].microseconds, rb.timings[t].microseconds);
          EXPECT_EQ(ra.timings[t].device_timer, rb.timings[t].device_timer);
        }
        EXPECT_EQ(ra.first_non_finite, rb.first_non_finite);
        EXPECT_EQ(ra.error, rb.error);
        EXPECT_EQ(ra.pass(), rb.pass());
      }
    }
  }
  // Numbers are kept bit for bit (17 significant digits), including 0.1 + 0.2 and 1e-300.
  EXPECT_EQ(loaded.pipelines[0].replay->ranks[0].outputs[0].stats.max, 0.1 + 0.2);
  EXPECT_EQ(loaded.pipelines[0].replay->ranks[0].outputs[0].stats.mean, 1e-300);

  ASSERT_EQ(loaded.comparisons.size(), 1u);
  EXPECT_EQ(loaded.comparisons[0].verdict, Verdict::different);
  EXPECT_EQ(loaded.comparisons[0].why, "numbers differ");
  EXPECT_EQ(loaded.pipelines[2].outcome.kind, Outcome::failed);
  EXPECT_EQ(loaded.pipelines[2].outcome.rule, "state-read-at-call");
  EXPECT_EQ(loaded.pipelines[2].outcome.reasons, original.pipelines[2].outcome.reasons);
  EXPECT_TRUE(std::isinf(loaded.comparisons[0].numbers[1].max_abs));
  EXPECT_TRUE(std::isnan(loaded.comparisons[0].numbers[1].max_rel));
  EXPECT_EQ(loaded.comparisons[0].stages[0].left_pass, "Delete Last Used");

  ASSERT_TRUE(loaded.rules);
  EXPECT_EQ(loaded.rules->model, "linear");
  EXPECT_EQ(loaded.rules->world_size, 2);
  EXPECT_EQ(loaded.rules->transforms, original.rules->transforms);
  ASSERT_EQ(loaded.rules->cells.size(), original.rules->cells.size());
  for (size_t i = 0; i < loaded.rules->cells.size(); ++i) {
    EXPECT_EQ(loaded.rules->cells[i].order, original.rules->cells[i].order);
    EXPECT_EQ(loaded.rules->cells[i].versus, original.rules->cells[i].versus);
    EXPECT_EQ(loaded.rules->cells[i].semantics, original.rules->cells[i].semantics);
    EXPECT_EQ(loaded.rules->cells[i].verdict, original.rules->cells[i].verdict);
    EXPECT_EQ(loaded.rules->cells[i].outcome, original.rules->cells[i].outcome);
    EXPECT_EQ(loaded.rules->cells[i].rule, original.rules->cells[i].rule);
    EXPECT_EQ(loaded.rules->cells[i].detail, original.rules->cells[i].detail);
  }
  EXPECT_EQ(loaded.rules->explanations, original.rules->explanations);
  ASSERT_TRUE(loaded.rules->find({"ddp", "fsdp"}));
  EXPECT_EQ(loaded.rules->find({"ddp", "fsdp"})->label(), "refused: one-parameter-distribution");
  ASSERT_TRUE(loaded.rules->find({"jit", "ddp"}, "thunder-2024-03"));
  EXPECT_EQ(loaded.rules->find({"jit", "ddp"}, "thunder-2024-03")->rule, "state-read-at-jit");

  // Saving what was loaded writes the same document, byte for byte.
  EXPECT_EQ(capture_to_json(loaded), contents(path));
}

// A name ending in ".gz" saves gzip (smaller, the same document inside); a load recognises gzip by
// its bytes, whatever the name; a cut-off or damaged gzip file is a CaptureError naming the file.
TEST(CaptureRoundTrip, GzipCaptureSurvivesSaveAndLoad) {
  TempDir dir;
  Capture original = realistic_capture();
  auto plain = dir.file("run.tvz.json"), packed = dir.file("run.tvz.json.gz");
  save_capture(original, plain);
  save_capture(original, packed);
  std::string bytes = contents(packed);
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);
  EXPECT_LT(bytes.size() * 3, contents(plain).size()) << "gzip should pay on repeated trace text";
  EXPECT_EQ(capture_to_json(load_capture(packed)), contents(plain));
  auto renamed = dir.file("renamed.tvz.json");
  fs::copy_file(packed, renamed);
  EXPECT_EQ(capture_to_json(load_capture(renamed)), contents(plain));

  auto cut = dir.file("cut.tvz.json.gz");
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  try {
    load_capture(cut);
    FAIL() << "a cut-off gzip capture loaded";
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find("cut.tvz.json.gz"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cut off"), std::string::npos) << e.what();
  }
  auto damaged = dir.file("damaged.tvz.json.gz");
  std::string flipped = bytes;
  for (size_t i = 20; i < flipped.size() && i < 60; ++i) flipped[i] = static_cast<char>(~flipped[i]);
  std::ofstream(damaged, std::ios::binary) << flipped;
  EXPECT_THROW(load_capture(damaged), CaptureError);
}

// The traces of mlp under jit,ddp and jit,fsdp on 2 ranks, not replayed: their parameter proxies
// are laid out (replicated, fully_sharded), which the printed text does not show.
Capture distributed_capture() {
  RunRequest r;
  r.model = "mlp";
  r.replay = false;
  for (const char* t : {"ddp", "fsdp"}) {
    PipelineSpec spec;
    spec.order = {"jit", t};
    spec.world_size = 2;
    r.pipelines.push_back(spec);
  }
  return run_pipelines(r);
}

TEST(CaptureRoundTrip, ParameterLayoutSurvivesSaveAndLoad) {
  TempDir dir;
  auto path = dir.file("layout.tvz.json");
  save_capture(distributed_capture(), path);
  Capture loaded = load_capture(path);
  ASSERT_EQ(loaded.pipelines.size(), 2u);
  std::pair<size_t, Distribution> want[] = {{0, Distribution::replicated}, {1, Distribution::fully_sharded}};
  for (const auto& [index, layout] : want) {
    const auto& forward = loaded.pipelines[index].stages.forward;
    ASSERT_FALSE(forward.empty());
    for (const auto& stage : forward) {
      size_t parameters = 0;
      for (const auto& p : stage.trace->params) {
        if (p.proxy->name.rfind("t_", 0) != 0) {
          EXPECT_EQ(p.proxy->distribution, Distribution::none) << p.proxy->name;
          continue;
        }
        ++parameters;
        EXPECT_EQ(p.proxy->distribution, layout) << stage.pass << " " << p.proxy->name;
        // One proxy per name: the uses in the body say the same.
        for (const auto& b : stage.trace->body)
          for (const auto& in : b.inputs())
            if (in->name == p.proxy->name) EXPECT_EQ(in->distribution, layout) << stage.pass << " " << in->name;
      }
      if (stage.pass == "acquisition") EXPECT_EQ(parameters, 4u);
    }
  }
}

// Forward <-> backward links are not in the printed text: the capture keeps them beside it, at every
// backward stage, and each one names a statement of the final forward.
TEST(CaptureRoundTrip, GradientLinksSurviveSaveAndLoad) {
  TempDir dir;
  auto path = dir.file("links.tvz.json");
  Capture made = distributed_capture();
  save_capture(made, path);
  Capture loaded = load_capture(path);
  ASSERT_EQ(loaded.pipelines.size(), made.pipelines.size());
  for (size_t p = 0; p < made.pipelines.size(); ++p) {
    const auto& before = made.pipelines[p].stages;
    const auto& after = loaded.pipelines[p].stages;
    ASSERT_EQ(after.backward.size(), before.backward.size());
    const Trace& forward = *after.forward.back().trace;
    EXPECT_EQ(gradient_links(forward), gradient_links(*before.forward.back().trace));
    for (size_t s = 0; s < before.backward.size(); ++s) {
      auto links = gradient_links(*before.backward[s].trace);
      EXPECT_GE(links.size(), 4u) << before.backward[s].pass;  // mlp: two linears, a gelu's pieces
      EXPECT_EQ(gradient_links(*after.backward[s].trace), links) << after.backward[s].pass;
      for (const auto& [index, key] : links)
        EXPECT_NE(forward_statement(forward, key), nullptr) << after.backward[s].pass << ": " << key;
    }
  }
}

TEST(CaptureErrors, GradientLinkPastTheTraceNamesItsPath) {
  TempDir dir;
  auto path = dir.file("links.tvz.json");
  save_capture(distributed_capture(), path);
  auto doc = Json::parse(read_file(path));
  doc["pipelines"][0]["stages"]["backward"][0]["gradient_of"]["99999"] = "t0";
  Capture loaded = capture_from_json(doc.dump());  // stored traces are read when first shown
  try {
    (void)loaded.pipelines[0].stages.backward[0].trace.get();
    FAIL() << "an out-of-range link was accepted";
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find("/pipelines/0/stages/backward/0/gradient_of"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("99999"), std::string::npos) << e.what();
  }
  doc["pipelines"][0]["stages"]["backward"][0]["gradient_of"] = {{"x1", "t0"}};
  try {
    capture_from_json(doc.dump());
    FAIL() << "a key that is not an index was accepted";
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find("gradient_of/x1"), std::string::npos) << e.what();
  }
}

// Source lines are in the text only as headers; what passes moved or made (fusion regions' members,
// ddp's and fsdp's collectives) the capture keeps beside it, so every statement of every stage has
// the same line after a load.
TEST(CaptureRoundTrip, SourceLinesSurviveSaveAndLoad) {
  TempDir dir;
  auto path = dir.file("sources.tvz.json");
  Capture made = distributed_capture();
  save_capture(made, path);
  Capture loaded = load_capture(path);
  auto texts = [](const std::vector<SourceRef>& sources) {
    std::vector<std::string> out;
    for (const auto& s : sources) out.push_back(s ? *s : "");
    return out;
  };
  size_t with_a_line = 0;
  for (size_t p = 0; p < made.pipelines.size(); ++p) {
    const auto& before = made.pipelines[p].stages;
    const auto& after = loaded.pipelines[p].stages;
    const Trace* forward_before = before.forward.back().trace.get();
    const Trace* forward_after = after.forward.back().trace.get();
    for (auto k : kTraceKinds) {
      ASSERT_EQ(after.of(k).size(), before.of(k).size());
      for (size_t s = 0; s < before.of(k).size(); ++s) {
        auto expected = texts(statement_sources(*before.of(k)[s].trace, forward_before));
        EXPECT_EQ(texts(statement_sources(*after.of(k)[s].trace, forward_after)), expected)
            << trace_kind_name(k) << " " << before.of(k)[s].pass;
        for (const auto& e : expected) with_a_line += !e.empty();
      }
    }
  }
  EXPECT_GT(with_a_line, 100u);
  // Where the headers say it all (the acquired forward), the capture stores nothing beside them.
  auto doc = Json::parse(read_file(path));
  EXPECT_FALSE(doc["pipelines"][0]["stages"]["forward"][0].contains("sources"));
}

TEST(CaptureErrors, SourcePastTheTraceNamesItsPath) {
  TempDir dir;
  auto path = dir.file("sources.tvz.json");
  save_capture(distributed_capture(), path);
  auto doc = Json::parse(read_file(path));
  doc["pipelines"][0]["stages"]["forward"][0]["sources"]["99999"] = "model.py:3";
  Capture loaded = capture_from_json(doc.dump());
  try {
    (void)loaded.pipelines[0].stages.forward[0].trace.get();
    FAIL() << "an out-of-range source was accepted";
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find("/pipelines/0/stages/forward/0/sources"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("99999"), std::string::npos) << e.what();
  }
  doc["pipelines"][0]["stages"]["forward"][0]["sources"] = {{"2", 7}};
  try {
    capture_from_json(doc.dump());
    FAIL() << "a source that is not a string was accepted";
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find("sources/2"), std::string::npos) << e.what();
  }
}

TEST(CaptureRoundTrip, EmptyCaptureAndNoRules) {
  Capture c;
  c.pipelines.emplace_back();
  c.pipelines[0].stages.forward.push_back({"acquisition", nullptr, 0.5, true});  // a stage without a trace
  auto loaded = capture_from_json(capture_to_json(c));
  ASSERT_EQ(loaded.pipelines.size(), 1u);
  ASSERT_EQ(loaded.pipelines[0].stages.forward.size(), 1u);
  EXPECT_FALSE(loaded.pipelines[0].stages.forward[0].trace);
  EXPECT_FALSE(loaded.pipelines[0].replay);
  EXPECT_FALSE(loaded.rules);
  EXPECT_EQ(capture_to_json(loaded), capture_to_json(c));
}

// A CUDA graph run keeps its relative difference; a capture written before that field reads it as
// the absolute difference, never smaller.
TEST(CaptureRoundTrip, CudaGraphRelativeDifference) {
  Capture c;
  c.pipelines.emplace_back();
  c.pipelines[0].replay = replay_of(1);
  CudaGraphRun g;
  g.ran = true;
  g.steps = 5;
  g.step_ms = 159.86;
  g.graph_ms = 159.14;
  g.max_abs_difference = 0.0176;  // the large gpt's step against its CUDA graph (BENCHMARKS.md)
  g.max_relative_difference = 8.6e-7;
  c.pipelines[0].replay->ranks[0].cuda_graph = g;
  Json doc = doc_of(c);
  auto back = capture_from_json(doc.dump()).pipelines[0].replay->ranks[0].cuda_graph;
  ASSERT_TRUE(back);
  EXPECT_EQ(back->max_relative_difference, 8.6e-7);
  EXPECT_TRUE(back->matches()) << back->describe();

  Json& graph = doc["pipelines"][0]["replay"]["ranks"][0]["cuda_graph"];
  ASSERT_TRUE(graph.contains("max_relative_difference")) << graph.dump();
  graph.erase("max_relative_difference");
  auto older = capture_from_json(doc.dump()).pipelines[0].replay->ranks[0].cuda_graph;
  ASSERT_TRUE(older);
  EXPECT_EQ(older->max_relative_difference, 0.0176);
  EXPECT_FALSE(older->matches());
}

TEST(CaptureFormat, DocumentLayout) {
  Json doc = doc_of(realistic_capture());
  EXPECT_EQ(doc.begin().key(), "format");
  EXPECT_EQ(doc["format"], "thunder-viz-capture");
  EXPECT_EQ(doc["version"], kCaptureVersion);
  const auto& fwd = doc["pipelines"][0]["stages"]["forward"];
  ASSERT_EQ(fwd.size(), 7u);
  EXPECT_EQ(fwd[0]["pass"], "acquisition");
  EXPECT_EQ(fwd[6]["pass"], "Delete Last Used");
  EXPECT_EQ(stage_text(doc, fwd[6]), read_file(fs::path(TV_FIXTURES_DIR) / "linear__fwd__06.txt"));
  // Each distinct line once, in the table that ends the document; the stages are runs of it.
  EXPECT_EQ(std::prev(doc.end()).key(), "lines");
  std::set<std::string> distinct;
  for (const auto& line : doc["lines"]) distinct.insert(line.get<std::string>());
  EXPECT_EQ(distinct.size(), doc["lines"].size());
  size_t lines_of_stages = 0;
  for (const auto& p : doc["pipelines"])
    for (const auto& [kind, list] : p["stages"].items())
      for (const auto& stage : list)
        for (size_t r = 1; r < stage["lines"].size(); r += 2) lines_of_stages += stage["lines"][r].get<size_t>();
  EXPECT_GT(lines_of_stages, 3 * doc["lines"].size()) << doc["lines"].size();  // stages repeat most lines
  // No parameter is distributed here.
  EXPECT_FALSE(fwd[6].contains("text"));
  EXPECT_FALSE(fwd[6].contains("structure"));
  EXPECT_FALSE(fwd[6].contains("distributions"));

  // The layouts of distributed parameters, which the text does not show.
  Json distributed = doc_of(distributed_capture());
  const auto& ddp = distributed["pipelines"][0]["stages"]["forward"][0];
  ASSERT_TRUE(ddp.contains("distributions")) << ddp.dump().substr(0, 400);
  for (const auto& [name, layout] : ddp["distributions"].items()) {
    EXPECT_EQ(name.rfind("t_", 0), 0u) << name;
    EXPECT_EQ(layout, "replicated");
  }
  EXPECT_EQ(distributed["pipelines"][1]["stages"]["forward"][0]["distributions"].begin().value(), "fully_sharded");

  // Non-finite numbers are strings; the optional replay of a refused pipeline is null.
  EXPECT_EQ(doc["pipelines"][0]["replay"]["ranks"][0]["gradients"][0]["max_abs"], "NaN");
  EXPECT_EQ(doc["pipelines"][0]["replay"]["ranks"][0]["gradients"][0]["stats"]["min"], "-Infinity");
  EXPECT_TRUE(doc["pipelines"][2]["replay"].is_null());
}

TEST(CaptureFormat, DocumentedExampleLoadsAndIsWhatTheToolWrites) {
  std::string md = read_file(std::string(TV_SOURCE_DIR) + "/docs/capture-format.md");
  auto begin = md.find("```json\n");
  ASSERT_NE(begin, std::string::npos);
  begin += 8;
  auto end = md.find("```", begin);
  ASSERT_NE(end, std::string::npos);
  std::string example = md.substr(begin, end - begin);
  Capture c = capture_from_json(example, "capture-format.md");
  ASSERT_EQ(c.pipelines.size(), 1u);
  ASSERT_EQ(c.pipelines[0].stages.epilogue.size(), 1u);
  EXPECT_EQ(print_trace(*c.pipelines[0].stages.epilogue[0].trace),
            read_file(fs::path(TV_FIXTURES_DIR) / "linear__epilogue__00.txt"));
  // Written again, it is the same document (member order and spacing aside).
  EXPECT_EQ(nlohmann::json::parse(capture_to_json(c)), nlohmann::json::parse(example));
}

// ---------------------------------------------------------------------------------------------
// The document matches docs/capture.schema.json (validated by Python's jsonschema)

TEST(CaptureSchema, WrittenDocumentsMatchTheSchema) {
  if (std::system("/usr/bin/python3 -c 'import jsonschema' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3-jsonschema is not installed (apt-get install python3-jsonschema)";
  TempDir dir;
  std::string schema = std::string(TV_SOURCE_DIR) + "/docs/capture.schema.json";
  ASSERT_TRUE(fs::exists(schema));

  save_capture(realistic_capture(), dir.file("realistic.tvz.json"));
  save_capture(Capture{}, dir.file("empty.tvz.json"));
  save_capture(small_capture(), dir.file("small.tvz.json"));
  save_capture(distributed_capture(), dir.file("distributed.tvz.json"));

  // Documents the schema must refuse (so a test that passes means something).
  Json good = doc_of(small_capture());
  std::vector<std::pair<std::string, Json>> bad;
  {
    Json d = good;
    d["pipelines"][0]["stages"]["forward"][1]["lines"] = 42;
    bad.push_back({"lines-is-a-number", d});
  }
  {
    Json d = good;
    d["pipelines"][0]["stages"]["forward"][1]["lines"][0] = -1;
    bad.push_back({"negative-line", d});
  }
  {
    Json d = good;
    d.erase("lines");
    bad.push_back({"no-line-table", d});
  }
  {
    Json d = good;
    d.erase("model");
    bad.push_back({"no-model", d});
  }
  {
    Json d = good;
    d["format"] = "something-else";
    bad.push_back({"wrong-format", d});
  }
  {
    Json d = good;
    d["pipelines"][0]["stages"]["forward"][0]["distributions"] = {{"t_weight", "scattered"}};
    bad.push_back({"unknown-layout", d});
  }
  {
    Json d = good;
    d["pipelines"][0]["stages"]["forward"][0]["distributions"] = Json::array({"t_weight"});
    bad.push_back({"layouts-not-an-object", d});
  }
  {
    Json d = good;
    d["pipelines"][0]["stages"]["forward"][0]["structure"] = Json::object();
    bad.push_back({"version-3-structure", d});
  }
  {
    Json d = good;
    d["pipelines"][0]["replay"]["ranks"][0]["outputs"][0]["stats"]["min"] = "lots";
    bad.push_back({"bad-number", d});
  }
  std::string args;
  for (auto name : {"realistic", "empty", "small", "distributed"}) args += " good:" + dir.file(std::string(name) + ".tvz.json");
  for (const auto& [name, d] : bad) {
    auto f = dir.file(name + ".json");
    std::ofstream(f) << d.dump(1);
    args += " bad:" + f;
  }

  auto script = dir.file("validate.py");
  std::ofstream(script) << R"PY(
import json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
cls = jsonschema.validators.validator_for(schema)
cls.check_schema(schema)
validator = cls(schema)
failed = 0
for arg in sys.argv[2:]:
    expect, path = arg.split(":", 1)
    errors = list(validator.iter_errors(json.load(open(path))))
    if expect == "good" and errors:
        failed += 1
        for e in errors[:10]:
            print("INVALID", path, "/" + "/".join(str(p) for p in e.absolute_path), e.message[:300])
    if expect == "bad" and not errors:
        failed += 1
        print("ACCEPTED BUT SHOULD NOT", path)
print("schema check:", "ok" if failed == 0 else "%d failed" % failed)
sys.exit(1 if failed else 0)
)PY";
  auto log = dir.file("log.txt");
  int rc = std::system(("/usr/bin/python3 " + script + " " + schema + args + " > " + log + " 2>&1").c_str());
  EXPECT_EQ(rc, 0) << read_file(log);
}

// ---------------------------------------------------------------------------------------------
// Errors: each a CaptureError with the file, a JSON path and what was expected

TEST(CaptureErrors, MissingField) {
  Json d = doc_of(small_capture());
  d["pipelines"][0]["stages"]["forward"][1].erase("lines");
  auto e = error_of(d.dump(), "run.tvz.json");
  EXPECT_EQ(e.json_path(), "/pipelines/0/stages/forward/1/lines");
  EXPECT_EQ(e.file(), "run.tvz.json");
  EXPECT_NE(std::string(e.what()).find("run.tvz.json: /pipelines/0/stages/forward/1/lines: missing required field"),
            std::string::npos)
      << e.what();

  Json m = doc_of(small_capture());
  m.erase("model");
  EXPECT_EQ(error_of(m.dump()).json_path(), "/model");
}

TEST(CaptureErrors, WrongType) {
  Json d = doc_of(small_capture());
  d["pipelines"][0]["stages"]["forward"][1]["lines"] = 7;
  auto e = error_of(d.dump(), "run.tvz.json");
  EXPECT_EQ(e.json_path(), "/pipelines/0/stages/forward/1/lines");
  EXPECT_EQ(e.message(), "expected an array, found number");
  EXPECT_STREQ(e.what(), "run.tvz.json: /pipelines/0/stages/forward/1/lines: expected an array, found number");
  // A text stored whole instead of as lines (what a hand edit may write) is a string.
  d["pipelines"][0]["stages"]["forward"][1].erase("lines");
  d["pipelines"][0]["stages"]["forward"][1]["text"] = 7;
  EXPECT_STREQ(error_of(d.dump(), "run.tvz.json").what(),
               "run.tvz.json: /pipelines/0/stages/forward/1/text: expected a string, found number");

  Json w = doc_of(small_capture());
  w["pipelines"][0]["spec"]["world_size"] = "2";
  auto e2 = error_of(w.dump());
  EXPECT_EQ(e2.json_path(), "/pipelines/0/spec/world_size");
  EXPECT_NE(e2.message().find("expected an integer, found string"), std::string::npos) << e2.what();

  Json s = doc_of(small_capture());
  s["pipelines"][0]["replay"]["ranks"][0]["outputs"][0]["stats"]["shape"][1] = 2.5;
  EXPECT_EQ(error_of(s.dump()).json_path(), "/pipelines/0/replay/ranks/0/outputs/0/stats/shape/1");

  Json k = doc_of(small_capture());
  k["pipelines"][0]["replay"]["ranks"][0]["proxies"]["weird/name~0"]["dtype"] = "f31";
  auto e3 = error_of(k.dump());
  EXPECT_EQ(e3.json_path(), "/pipelines/0/replay/ranks/0/proxies/weird~1name~00/dtype");  // RFC 6901 escapes
  EXPECT_NE(e3.message().find("expected a dtype"), std::string::npos);

  Json root = Json::array({1, 2});
  auto e4 = error_of(root.dump());
  EXPECT_EQ(e4.json_path(), "");
  EXPECT_NE(e4.message().find("expected an object"), std::string::npos);

  Json f = doc_of(small_capture());
  f["format"] = "something-else";
  EXPECT_NE(std::string(error_of(f.dump()).what()).find("not a thunder-viz capture"), std::string::npos);

  Json c = doc_of(realistic_capture());
  c["comparisons"][0]["right"] = 7;
  auto e5 = error_of(c.dump());
  EXPECT_EQ(e5.json_path(), "/comparisons/0/right");
  EXPECT_NE(e5.message().find("index of a pipeline"), std::string::npos);
}

TEST(CaptureErrors, NumbersOutsideDoubleRangeNameTheirPath) {
  Json d = doc_of(small_capture());
  d["pipelines"][0]["replay"]["ranks"][0]["outputs"][0]["max_abs"] = 987654321;
  std::string text = d.dump();
  text.replace(text.find("987654321"), 9, "1e400");
  auto e = error_of(text, "run.tvz.json");
  EXPECT_EQ(e.json_path(), "/pipelines/0/replay/ranks/0/outputs/0/max_abs") << e.what();
  EXPECT_NE(e.message().find("outside the range of a double"), std::string::npos) << e.what();
  EXPECT_EQ(std::string(e.what()).find("[json.exception"), std::string::npos) << e.what();

  // In an array: the element's index.
  Json s = doc_of(small_capture());
  s["pipelines"][0]["replay"]["ranks"][0]["outputs"][0]["stats"]["shape"][1] = 987654321;
  text = s.dump();
  text.replace(text.find("987654321"), 9, "-1e999");
  EXPECT_EQ(error_of(text).json_path(), "/pipelines/0/replay/ranks/0/outputs/0/stats/shape/1");
}

TEST(CaptureErrors, DuplicateKeyIsRefusedWithItsPath) {
  std::string text = doc_of(small_capture()).dump();
  auto at = text.find("\"world_size\"");
  ASSERT_NE(at, std::string::npos);
  text.insert(at, "\"world_size\":3,");
  auto e = error_of(text);
  EXPECT_NE(e.message().find("\"world_size\" appears twice"), std::string::npos) << e.what();
  EXPECT_NE(e.json_path().find("world_size"), std::string::npos) << e.what();
}

TEST(CaptureErrors, WorldSizeIsCheckedBeforeItIsNarrowed) {
  for (int64_t world : {int64_t(4294967295), int64_t(4294967298), int64_t(1) << 21}) {
    Json d = doc_of(small_capture());
    d["pipelines"][0]["spec"]["world_size"] = world;
    auto e = error_of(d.dump());
    EXPECT_EQ(e.json_path(), "/pipelines/0/spec/world_size");
    EXPECT_NE(e.message().find(std::to_string(world) + " is out of range"), std::string::npos) << e.what();
  }
}

// An order's names are transforms this tool has, except where another tool named them.
TEST(CaptureErrors, UnknownTransformInAnOrderNamesItsPath) {
  Json d = doc_of(small_capture());
  d["pipelines"][0]["spec"]["order"] = {"jit", "bogus"};
  auto e = error_of(d.dump());
  EXPECT_EQ(e.json_path(), "/pipelines/0/spec/order/1");
  EXPECT_NE(e.message().find("unknown transform 'bogus'; valid transforms: jit, ddp"), std::string::npos) << e.what();

  // Lightning Thunder's own (a Python attach) and a folder of imported printouts' case names load.
  d["pipelines"][0]["spec"]["order"] = {"thunder.jit", "DDPTransform"};
  EXPECT_NO_THROW(capture_from_json(d.dump()));
  d["pipelines"][0]["spec"]["order"] = {"mlp"};
  d["model"]["name"] = "imported";
  EXPECT_NO_THROW(capture_from_json(d.dump()));
}

// Each replayed rank is a rank of the world, once; fewer ranks than the world load (one process's
// own capture, a pipeline that failed before its ranks ran).
TEST(CaptureErrors, ReplayedRankOutsideTheWorldNamesItsPath) {
  Json d = doc_of(realistic_capture());
  ASSERT_EQ(d["pipelines"][1]["spec"]["world_size"], 2);
  d["pipelines"][1]["replay"]["ranks"][1]["rank"] = 9;
  auto e = error_of(d.dump());
  EXPECT_EQ(e.json_path(), "/pipelines/1/replay/ranks/1/rank");
  EXPECT_NE(e.message().find("rank 9 is not a rank of the pipeline's world of 2"), std::string::npos) << e.what();

  d["pipelines"][1]["replay"]["ranks"][1]["rank"] = 0;
  e = error_of(d.dump());
  EXPECT_NE(e.message().find("rank 0 is replayed twice"), std::string::npos) << e.what();

  d = doc_of(realistic_capture());
  d["pipelines"][1]["replay"]["ranks"].erase(0);
  EXPECT_NO_THROW(capture_from_json(d.dump()));
}

TEST(CaptureErrors, NewerVersionIsRefused) {
  Json d = doc_of(small_capture());
  d["version"] = 7;
  d["pipelines"] = "whatever a future version keeps here";
  auto e = error_of(d.dump(), "future.tvz.json");
  EXPECT_EQ(e.json_path(), "/version");
  EXPECT_NE(e.message().find("this capture was written by a newer thunder-viz (version 7 > 5); upgrade the tool"),
            std::string::npos)
      << e.what();
}

// Version 0 (docs/capture-format.md): "stages" was one flat list whose entries named their
// "kind", and stages had no "structure". Before version 2 pipelines had no "outcome", comparisons
// no "why", a comparison's verdict was "equivalent", "different" or "failed", and a rules cell's
// "equivalent", "different", "illegal" (refused) or "failed", with no "outcome".
Json as_version_0(const Json& current) {
  Json d = as_version_4(current);
  d["version"] = 0;
  // Before version 3: capture_at_jit (thunder-2024-03) instead of a semantics mode and a workaround.
  for (auto& p : d["pipelines"]) {
    p["spec"]["capture_at_jit"] = p["spec"]["semantics"] == "thunder-2024-03";
    p["spec"].erase("semantics");
    p["spec"].erase("workaround");
  }
  for (auto& cell : d["rules"]["cells"]) {
    cell["capture_at_jit"] = cell["semantics"] == "thunder-2024-03";
    cell.erase("semantics");
  }
  d["rules"].erase("semantics");
  for (auto& p : d["pipelines"]) p.erase("outcome");
  for (auto& c : d["comparisons"]) {
    if (c["verdict"] == "not comparable") c["verdict"] = "failed";
    c.erase("why");
  }
  for (auto& cell : d["rules"]["cells"]) {
    if (cell["verdict"] == "not comparable") cell["verdict"] = cell["outcome"] == "refused" ? "illegal" : "failed";
    cell.erase("outcome");
  }
  for (auto& p : d["pipelines"]) {
    Json flat = Json::array();
    for (auto& [kind, list] : p["stages"].items())
      for (auto s : list) {
        s.erase("structure");
        Json e = {{"kind", kind == "forward" ? "computation" : kind}};
        for (auto& [k, v] : s.items()) e[k] = v;
        flat.push_back(e);
      }
    p["stages"] = flat;
  }
  return d;
}

TEST(CaptureErrors, OlderVersionIsUpgraded) {
  Capture original = realistic_capture();
  assess(original);  // an old document's outcomes and verdicts are recomputed on load
  Json old = as_version_0(doc_of(original));
  ASSERT_TRUE(old["pipelines"][0]["stages"].is_array());
  Capture loaded = capture_from_json(old.dump(), "old.tvz.json");
  EXPECT_EQ(loaded.loaded_from_version, 0);
  EXPECT_EQ(loaded.version, kCaptureVersion);
  // Upgraded in memory: saving it writes the current version, identical to the original.
  EXPECT_EQ(capture_to_json(loaded), capture_to_json(original));
  EXPECT_EQ(loaded.pipelines[0].stages.forward.size(), 7u);

  // Errors inside an old document name paths of that document.
  old["pipelines"][0]["stages"][3]["kind"] = "sideways";
  auto e = error_of(old.dump());
  EXPECT_EQ(e.json_path(), "/pipelines/0/stages/3/kind");
  old["pipelines"][0]["stages"][3]["kind"] = "forward";
  old["pipelines"][0]["stages"][4]["text"] = false;
  EXPECT_EQ(error_of(old.dump()).json_path(), "/pipelines/0/stages/4/text");

  // Members that are optional on load take their defaults.
  Json lean = doc_of(realistic_capture());
  lean["rules"]["cells"][1].erase("versus");
  lean["rules"]["cells"][1].erase("semantics");
  Capture from_lean = capture_from_json(lean.dump());
  EXPECT_TRUE(from_lean.rules->cells[1].versus.empty());
  EXPECT_EQ(from_lean.rules->cells[1].semantics, "lazy");

  Json unknown = doc_of(small_capture());
  unknown["version"] = -1;
  EXPECT_EQ(error_of(unknown.dump()).json_path(), "/version");
}

// Version 3 files as the tool wrote them (tests/fixtures/captures): each trace was also stored as
// a structure, which a load still checks and takes the parameters' layouts from.
TEST(CaptureErrors, Version3FilesLoadAndUpgrade) {
  const std::string folder = std::string(TV_SOURCE_DIR) + "/tests/fixtures/captures/";
  int layouts = 0;
  for (const char* name : {"compare_seed.tvz.json", "compare_seed_2024.tvz.json", "rules_linear.tvz.json", "run_linear.tvz.json"}) {
    SCOPED_TRACE(name);
    Json doc = Json::parse(read_file(folder + name));
    ASSERT_EQ(doc["version"], 3);
    Capture c = load_capture(folder + name);
    EXPECT_EQ(c.loaded_from_version, 3);
    ASSERT_EQ(c.pipelines.size(), doc["pipelines"].size());
    for (size_t p = 0; p < c.pipelines.size(); ++p)
      for (auto kind : kTraceKinds) {
        const auto& stored = doc["pipelines"][p]["stages"][std::string(trace_kind_name(kind))];
        const auto& stages = c.pipelines[p].stages.of(kind);
        ASSERT_EQ(stages.size(), stored.size());
        for (size_t i = 0; i < stages.size(); ++i) {
          ASSERT_TRUE(stages[i].trace);
          EXPECT_EQ(print_trace(*stages[i].trace), stored[i]["text"].get<std::string>());
          for (const auto& param : stored[i]["structure"]["params"]) {
            if (!param.contains("distribution")) continue;
            ++layouts;
            for (const auto& q : stages[i].trace->params)
              if (q.proxy->name == param["name"].get<std::string>()) EXPECT_EQ(q.proxy->distribution, Distribution::replicated);
          }
        }
      }
    // Saved, it is the current version: each line once, the layouts beside the texts, and it loads
    // to the same capture.
    Json saved = Json::parse(capture_to_json(c));
    EXPECT_EQ(saved["version"], kCaptureVersion);
    EXPECT_EQ(capture_to_json(capture_from_json(saved.dump())), saved.dump() + "\n");
  }
  EXPECT_EQ(layouts, 21);

  // A damaged structure in a version 3 file is still refused, at its path.
  Json doc = Json::parse(read_file(folder + "compare_seed.tvz.json"));
  doc["pipelines"][0]["stages"]["forward"][1]["structure"]["params"][0]["distribution"] = "scattered";
  EXPECT_EQ(error_of(doc.dump()).json_path(), "/pipelines/0/stages/forward/1/structure/params/0/distribution");
  doc = Json::parse(read_file(folder + "compare_seed.tvz.json"));
  doc["pipelines"][0]["stages"]["forward"][1]["structure"]["bound_symbols"][0]["outputs"] = "t0";
  EXPECT_EQ(error_of(doc.dump()).json_path(), "/pipelines/0/stages/forward/1/structure/bound_symbols/0/outputs");
}

// Version 4 stored each stage's text whole; it loads, and saves as the current version.
TEST(CaptureErrors, Version4DocumentsLoadAndUpgrade) {
  Capture original = realistic_capture();
  Json v4 = as_version_4(doc_of(original));
  Capture loaded = capture_from_json(v4.dump(), "v4.tvz.json");
  EXPECT_EQ(loaded.loaded_from_version, 4);
  EXPECT_EQ(capture_to_json(loaded), capture_to_json(original));
  // The line table is what makes the current version smaller: here by more than half.
  EXPECT_LT(2 * capture_to_json(original).size(), v4.dump().size());

  // The file the tool wrote in version 4.
  const std::string file = std::string(TV_SOURCE_DIR) + "/tests/fixtures/captures/compare_seed_v4.tvz.json";
  Json doc = Json::parse(read_file(file));
  ASSERT_EQ(doc["version"], 4);
  Capture c = load_capture(file);
  EXPECT_EQ(c.loaded_from_version, 4);
  parse_stored_traces(c);
  const auto& stored = doc["pipelines"][0]["stages"]["backward"];
  const auto& stages = c.pipelines[0].stages.backward;
  ASSERT_EQ(stages.size(), stored.size());
  for (size_t i = 0; i < stages.size(); ++i) EXPECT_EQ(print_trace(*stages[i].trace), stored[i]["text"].get<std::string>());
  Json saved = doc_of(c);
  EXPECT_EQ(saved["version"], kCaptureVersion);
  for (size_t i = 0; i < stages.size(); ++i)
    EXPECT_EQ(stage_text(saved, saved["pipelines"][0]["stages"]["backward"][i]), stored[i]["text"].get<std::string>());
}

TEST(CaptureErrors, RunsOfTheLineTableAreChecked) {
  const Json good = doc_of(small_capture());
  const size_t n = good["lines"].size();
  auto path_and_message = [](const Json& d) {
    auto e = error_of(d.dump(), "run.tvz.json");
    return e.json_path() + ": " + e.message();
  };
  Json d = good;
  auto& runs = d["pipelines"][0]["stages"]["forward"][1]["lines"];
  runs = Json::array({0, 1, n - 1, 2});
  EXPECT_EQ(path_and_message(d), "/pipelines/0/stages/forward/1/lines/2: lines " + std::to_string(n - 1) + " to " +
                                     std::to_string(n) + " are past the end of /lines (" + std::to_string(n) + " lines)");
  runs = Json::array({0, 0});
  EXPECT_EQ(path_and_message(d), "/pipelines/0/stages/forward/1/lines/1: expected an integer of at least 1, found 0");
  runs = Json::array({-1, 1});
  EXPECT_EQ(path_and_message(d), "/pipelines/0/stages/forward/1/lines/0: expected an integer of at least 0, found -1");
  runs = Json::array({"0", 3});
  EXPECT_EQ(path_and_message(d), "/pipelines/0/stages/forward/1/lines/0: expected an integer, found string");
  runs = Json::array({0, 1, 2});
  EXPECT_EQ(path_and_message(d), "/pipelines/0/stages/forward/1/lines: expected pairs of integers (first line, count), found 3 integers");
  runs = Json::array({std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max()});
  EXPECT_NE(path_and_message(d).find("/lines/0: lines 9223372036854775807 to "), std::string::npos);
  runs = Json::array({0, std::numeric_limits<uint64_t>::max()});
  EXPECT_NE(path_and_message(d).find("/lines/1: "), std::string::npos);

  d = good;
  d["pipelines"][0]["stages"]["forward"][1]["text"] = "def f():\n  return";
  EXPECT_EQ(path_and_message(d),
            "/pipelines/0/stages/forward/1/text: a stage stores its trace as \"lines\" or as \"text\", not both");

  d = good;
  d["lines"][3] = 3;
  EXPECT_EQ(path_and_message(d), "/lines/3: expected a string, found number");

  // A few runs of one long line make no more than a trace's worth of text.
  d = good;
  d["lines"].push_back(std::string(1 << 20, '#'));
  Json many = Json::array();
  for (int i = 0; i < 300; ++i) {
    many.push_back(n);
    many.push_back(1);
  }
  d["pipelines"][0]["stages"]["forward"][1]["lines"] = many;
  EXPECT_EQ(path_and_message(d), "/pipelines/0/stages/forward/1/lines/510: the stored trace is longer than 256 MiB; "
                                 "the capture is damaged (edited or cut): make it again with the command that wrote it");
}

// A damaged line of the table: every stage made of it refuses to be read, each at its own path.
TEST(CaptureErrors, DamagedLineFailsEveryStageMadeOfIt) {
  Json d = doc_of(small_capture());
  size_t damaged = 0;
  for (; damaged < d["lines"].size(); ++damaged)
    if (d["lines"][damaged].get<std::string>().find("= ltorch.linear(") != std::string::npos) break;
  ASSERT_LT(damaged, d["lines"].size());
  std::string line = d["lines"][damaged].get<std::string>();
  line.erase(line.find("None)") + 4, 1);
  d["lines"][damaged] = line;
  Capture c = capture_from_json(d.dump(), "run.tvz.json");
  int failed = 0;
  const auto& forward = c.pipelines[0].stages.forward;
  for (size_t i = 0; i < forward.size(); ++i) {
    bool uses = false;
    const Json& runs = d["pipelines"][0]["stages"]["forward"][i]["lines"];
    for (size_t r = 0; r + 1 < runs.size(); r += 2)
      uses |= runs[r].get<size_t>() <= damaged && damaged < runs[r].get<size_t>() + runs[r + 1].get<size_t>();
    if (!uses) {
      EXPECT_NO_THROW(forward[i].trace.shared());
      continue;
    }
    ++failed;
    try {
      forward[i].trace.shared();
      ADD_FAILURE() << "stage " << i << " parsed";
    } catch (const CaptureError& e) {
      EXPECT_EQ(e.json_path(), "/pipelines/0/stages/forward/" + std::to_string(i) + "/lines");
      EXPECT_NE(e.message().find("the stored trace does not parse: line "), std::string::npos) << e.what();
    }
  }
  EXPECT_GE(failed, 1);
}

// A load parses no trace: each is parsed once, when first read, from any number of threads at once.
TEST(CaptureRoundTrip, StoredTracesAreParsedOnceWhenFirstRead) {
  Capture c = capture_from_json(capture_to_json(realistic_capture()));
  const Stage& stage = c.pipelines[0].stages.forward[3];
  ASSERT_TRUE(stage.trace.stored_lines());
  std::vector<const Trace*> seen(8);
  std::vector<std::thread> readers;
  for (size_t i = 0; i < seen.size(); ++i) readers.emplace_back([&, i] { seen[i] = stage.trace.get(); });
  for (auto& r : readers) r.join();
  for (const Trace* t : seen) EXPECT_EQ(t, seen[0]);
  ASSERT_TRUE(seen[0]);
  EXPECT_EQ(print_trace(*seen[0]), stage.trace.stored_lines()->text());
  // A copy of the stage shares the parse.
  Stage copy = stage;
  EXPECT_EQ(copy.trace.get(), seen[0]);
}

TEST(CaptureErrors, TruncatedEmptyAndBinaryFiles) {
  TempDir dir;
  std::string text = capture_to_json(small_capture());

  auto truncated = dir.file("truncated.tvz.json");
  std::ofstream(truncated) << text.substr(0, text.size() / 2);
  try {
    load_capture(truncated);
    FAIL() << "a truncated file loaded";
  } catch (const CaptureError& e) {
    EXPECT_EQ(e.file(), truncated);
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
  }

  auto empty = dir.file("empty.tvz.json");
  std::ofstream(empty).flush();
  try {
    load_capture(empty);
    FAIL() << "an empty file loaded";
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find("the file is empty"), std::string::npos) << e.what();
  }

  auto binary = dir.file("binary.tvz.json");
  {
    std::mt19937 rng(7);
    std::string junk(4096, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    std::ofstream(binary, std::ios::binary) << junk;
  }
  try {
    load_capture(binary);
    FAIL() << "binary garbage loaded";
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
    for (unsigned char c : std::string(e.what())) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "unprintable byte in message";
  }

  try {
    load_capture(dir.file("missing.tvz.json"));
    FAIL();
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
  }
  try {
    load_capture(dir.path.string());
    FAIL();
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find("folder"), std::string::npos) << e.what();
  }
}

TEST(CaptureErrors, StoredTraceWithSyntaxErrorGivesPathAndLineColumn) {
  Json d = doc_of(realistic_capture());
  // A hand edit: the stage's text stored whole, one parenthesis short.
  auto& stage = d["pipelines"][0]["stages"]["forward"][2];
  std::string text = stage_text(d, stage);
  stage.erase("lines");
  // Remove the closing parenthesis of the first call in the body.
  auto call = text.find("= ltorch.linear(");
  ASSERT_NE(call, std::string::npos);
  auto close = text.find("None)", call);
  ASSERT_NE(close, std::string::npos);
  text.erase(close + 4, 1);
  int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(call), '\n'));
  stage["text"] = text;

  // The document loads: a stored text is parsed when its stage is first read, and that read throws.
  Capture c = capture_from_json(d.dump(), "run.tvz.json");
  const auto& forward = c.pipelines[0].stages.forward;
  EXPECT_TRUE(forward[1].trace.get());
  CaptureError e("", "", "");
  try {
    forward[2].trace.shared();
    FAIL() << "the damaged text parsed";
  } catch (const CaptureError& thrown) {
    e = thrown;
  }
  EXPECT_THROW(parse_stored_traces(c), CaptureError);
  EXPECT_THROW(forward[2].trace.shared(), CaptureError);  // every read, not the first only
  EXPECT_THROW(capture_to_json(c), CaptureError);         // nothing saves a text that does not parse
  EXPECT_EQ(e.json_path(), "/pipelines/0/stages/forward/2/text");
  EXPECT_EQ(e.trace_line(), line);
  EXPECT_GT(e.trace_column(), 0);
  std::string expected = "run.tvz.json: /pipelines/0/stages/forward/2/text: the stored trace does not parse: line " +
                         std::to_string(line) + ", column ";
  EXPECT_EQ(std::string(e.what()).rfind(expected, 0), 0u) << e.what();
}

// ---------------------------------------------------------------------------------------------
// Fuzz: 10 000 mutated documents; each loads or gives a CaptureError whose path points into it

namespace {

Json random_value(std::mt19937& rng, Json::value_t avoid) {
  for (;;) {
    Json v;
    switch (rng() % 9) {
      case 0: v = nullptr; break;
      case 1: v = bool(rng() % 2); break;
      case 2: v = static_cast<int64_t>(rng() % 5) - 2; break;
      case 3: v = 1e300 * ((rng() % 2) ? 1 : -1); break;
      case 4: v = 2.5; break;
      case 5: v = "x"; break;
      case 6: v = Json::array({1, "a"}); break;
      case 7: v = Json::object({{"k", 1}}); break;
      case 8: v = std::numeric_limits<uint64_t>::max(); break;
    }
    if (v.type() != avoid) return v;
  }
}

// Every value's JSON pointer, depth first.
void pointers(const Json& j, const std::string& at, std::vector<std::string>& out) {
  out.push_back(at);
  if (j.is_object())
    for (const auto& [k, v] : j.items()) {
      std::string key;
      for (char c : k) key += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
      pointers(v, at + "/" + key, out);
    }
  else if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i) pointers(j[i], at + "/" + std::to_string(i), out);
}

std::string mutate(const std::string& text, const Json& doc, const std::vector<std::string>& ptrs, std::mt19937& rng) {
  auto pick = [&](size_t n) { return n == 0 ? size_t(0) : std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  std::string out = text;
  switch (rng() % 7) {
    case 0: {  // byte flips
      for (int i = 0, n = 1 + int(rng() % 8); i < n && !out.empty(); ++i) out[pick(out.size())] ^= char(1 << (rng() % 8));
      return out;
    }
    case 1:  // truncation
      return out.substr(0, pick(out.size()));
    case 2: {  // deleted span
      size_t a = pick(out.size()), n = 1 + pick(200);
      return out.erase(a, n);
    }
    case 3: {  // duplicated span
      size_t a = pick(out.size()), n = 1 + pick(200);
      return out.insert(pick(out.size()), out.substr(a, n));
    }
    case 4: {  // type swap of one JSON value
      Json d = doc;
      Json::json_pointer p(ptrs[pick(ptrs.size())]);
      if (p.empty()) return random_value(rng, Json::value_t::object).dump();
      auto& v = d[p];
      v = random_value(rng, v.type());
      return d.dump();
    }
    case 5: {  // a member removed
      Json d = doc;
      Json::json_pointer p(ptrs[pick(ptrs.size())]);
      if (p.empty()) return "{}";
      auto parent = p.parent_pointer();
      auto& container = d[parent];
      if (container.is_object()) container.erase(p.back());
      else if (container.is_array() && !container.empty()) container.erase(container.size() - 1);
      return d.dump();
    }
    default: {  // an edit inside a line of the stored traces (valid JSON, broken traces)
      Json d = doc;
      std::vector<std::string> texts;
      for (const auto& s : ptrs)
        if (s.rfind("/lines/", 0) == 0) texts.push_back(s);
      if (texts.empty()) return out;
      auto& v = d[Json::json_pointer(texts[pick(texts.size())])];
      if (!v.is_string()) return out;
      std::string t = v.get<std::string>();
      const std::string alphabet = "()[]{},:=.#'\"\\ \n\t-0123456789abcxyz_";
      for (int i = 0, n = 1 + int(rng() % 3); i < n && !t.empty(); ++i) {
        size_t at = pick(t.size());
        if (rng() % 2) t[at] = alphabet[pick(alphabet.size())];
        else t.erase(at, 1 + pick(20));
      }
      v = t;
      return d.dump();
    }
  }
}

}  // namespace

TEST(CaptureFuzz, TenThousandMutatedDocumentsNeverCrash) {
  const std::string text = capture_to_json(small_capture());
  const Json doc = Json::parse(text);
  std::vector<std::string> ptrs;
  pointers(doc, "", ptrs);
  std::mt19937 rng(20240611);
  int loaded = 0, refused = 0, json_errors = 0, trace_errors = 0;
  for (int i = 0; i < 10000; ++i) {
    std::string input = mutate(text, doc, ptrs, rng);
    try {
      parse_stored_traces(capture_from_json(input, "fuzz.tvz.json"));
      ++loaded;
    } catch (const CaptureError& e) {
      ++refused;
      const std::string& path = e.json_path();
      ASSERT_TRUE(path.empty() || path[0] == '/') << path;
      if (e.trace_line() > 0) ++trace_errors;
      if (path.empty()) {
        ++json_errors;
        continue;
      }
      // The path points into the document: at the bad value, or at a missing member of an object.
      Json parsed = Json::parse(input, nullptr, false);
      if (parsed.is_discarded()) {
        // Only a number outside a double's range: nlohmann refuses the document, a load names its path.
        ASSERT_NE(e.message().find("outside the range of a double"), std::string::npos)
            << "a JSON path for invalid JSON: " << e.what();
        continue;
      }
      Json::json_pointer p(path);
      bool ok = parsed.contains(p) || (parsed.contains(p.parent_pointer()) && parsed[p.parent_pointer()].is_object());
      ASSERT_TRUE(ok) << "path not in the document: " << e.what();
    } catch (const std::exception& e) {
      FAIL() << "not a CaptureError: " << e.what() << "\nmutation " << i;
    }
  }
  EXPECT_EQ(loaded + refused, 10000);
  EXPECT_GT(refused, 5000);
  EXPECT_GT(trace_errors, 100);
  EXPECT_GT(json_errors, 1000);
  std::printf("fuzz: %d loaded, %d refused (%d invalid JSON, %d trace parse errors)\n", loaded, refused, json_errors,
              trace_errors);
}

// ---------------------------------------------------------------------------------------------
// Atomic writes

namespace {

// A capture of many stages, tens of megabytes once written.
// Tens of megabytes of JSON: a replay timing every statement of a long run (a capture stores each
// line of its traces once, so more copies of the stages would add little).
Capture large_capture() {
  Capture c = realistic_capture();
  auto& fwd = c.pipelines[1].stages.forward;
  auto base = fwd;
  for (int copy = 0; copy < 600; ++copy) fwd.insert(fwd.end(), base.begin(), base.end());
  if (!c.pipelines[1].replay) c.pipelines[1].replay = Replay{};
  auto& ranks = c.pipelines[1].replay->ranks;
  if (ranks.empty()) ranks.emplace_back();
  for (int i = 0; i < 200000; ++i)
    ranks[0].timings.push_back({"forward", i, "ltorch.linear", "t" + std::to_string(i), 1.0 / (i + 3), false, i * 0.37});
  return c;
}

std::vector<std::string> temporaries(const TempDir& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir.path))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) out.push_back(e.path().string());
  return out;
}

}  // namespace

TEST(CaptureAtomicWrite, KilledSaveLeavesThePreviousFileIntact) {
  TempDir dir;
  auto target = dir.file("capture.tvz.json");
  save_capture(small_capture(), target);
  const std::string before = contents(target);
  const Capture big = large_capture();
  const std::string temp_name = fs::path(capture_detail::temporary_prefix(target)).filename().string();

  int killed_mid_write = 0;
  int attempts = 0;
  for (; attempts < 6 && killed_mid_write < 2; ++attempts) {
    int watch = inotify_init1(IN_CLOEXEC);
    ASSERT_GE(watch, 0);
    ASSERT_GE(inotify_add_watch(watch, dir.path.c_str(), IN_CREATE | IN_MODIFY), 0);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      if (nice(19) == -1) {}
      try {
        save_capture(big, target);
      } catch (...) {
        _exit(3);
      }
      _exit(0);
    }
    // Kill the child as soon as its temporary file has received data, however long it takes to
    // get there: on a loaded machine the niced child may take minutes to serialise the capture, and
    // waiting it out instead let every attempt finish its save.
    bool killed = false;
    while (!killed) {
      pollfd pfd{watch, POLLIN, 0};
      if (poll(&pfd, 1, 100) <= 0) {
        if (waitpid(child, nullptr, WNOHANG) == child) {
          child = -1;
          break;
        }
        continue;
      }
      alignas(inotify_event) char buffer[8192];
      ssize_t n = read(watch, buffer, sizeof buffer);
      for (char* p = buffer; n > 0 && p < buffer + n;) {
        auto* ev = reinterpret_cast<inotify_event*>(p);
        if ((ev->mask & IN_MODIFY) && ev->len > 0 && std::string(ev->name).rfind(temp_name, 0) == 0 && !killed) {
          kill(child, SIGKILL);
          killed = true;
        }
        p += sizeof(inotify_event) + ev->len;
      }
    }
    if (child > 0) {
      int status = 0;
      waitpid(child, &status, 0);
      if (killed) {
        EXPECT_TRUE(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0));
      }
    }
    close(watch);

    // Whatever happened, the target is a complete capture: the old one, or (killed too late) the new.
    std::string after = contents(target);
    EXPECT_NO_THROW(load_capture(target));
    if (after == before) {
      ++killed_mid_write;
      EXPECT_FALSE(temporaries(dir).empty()) << "the killed save left no temporary file?";
    } else {
      EXPECT_EQ(after, capture_to_json(big)) << "the target is neither the old nor the new capture";
      save_capture(small_capture(), target);
    }
    for (const auto& t : temporaries(dir)) fs::remove(t);
  }
  std::printf("killed mid-write in %d of %d attempts\n", killed_mid_write, attempts);
  EXPECT_GE(killed_mid_write, 1) << "no save was killed mid-write";
  EXPECT_EQ(contents(target), before);
  EXPECT_GT(capture_to_json(big).size(), 5u << 20) << "the large capture should take a while to write";
}

TEST(CaptureAtomicWrite, UnwritablePathGivesErrorAndTouchesNothing) {
  TempDir dir;
  const Capture c = small_capture();

  // A folder that does not exist.
  auto missing = dir.file("no/such/folder/run.tvz.json");
  try {
    save_capture(c, missing);
    FAIL();
  } catch (const CaptureError& e) {
    EXPECT_EQ(e.file(), missing);
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
  }

  // A parent that is a file.
  auto plain = dir.file("plain.txt");
  std::ofstream(plain) << "not a folder";
  try {
    save_capture(c, plain + "/run.tvz.json");
    FAIL();
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find("Not a directory"), std::string::npos) << e.what();
  }
  EXPECT_EQ(contents(plain), "not a folder");

  // A target that is a folder: refused before anything is written, the folder and its contents stay.
  auto folder = dir.file("folder.tvz.json");
  fs::create_directory(folder);
  std::ofstream(folder + "/keep.txt") << "keep";
  try {
    save_capture(c, folder);
    FAIL();
  } catch (const CaptureError& e) {
    EXPECT_NE(std::string(e.what()).find(folder), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("is a folder, not a regular file"), std::string::npos) << e.what();
  }
  EXPECT_EQ(contents(folder + "/keep.txt"), "keep");
  EXPECT_TRUE(temporaries(dir).empty());

  // A write that fails half-way (file size limit, EFBIG): the old file is untouched, no temporary
  // is left. Run in a child so the limit does not leak into other tests.
  auto target = dir.file("kept.tvz.json");
  save_capture(c, target);
  const std::string before = contents(target);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    signal(SIGXFSZ, SIG_IGN);
    rlimit limit{4096, 4096};
    setrlimit(RLIMIT_FSIZE, &limit);
    try {
      save_capture(large_capture(), target);
      _exit(10);
    } catch (const CaptureError& e) {
      std::string what = e.what();
      if (what.find(target) == std::string::npos) _exit(11);
      if (what.find("File too large") == std::string::npos) _exit(12);
      _exit(0);
    } catch (...) {
      _exit(13);
    }
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: saved, 11: path missing, 12: reason missing, 13: other error";
  EXPECT_EQ(contents(target), before);
  EXPECT_TRUE(temporaries(dir).empty());

  // A read-only folder (only meaningful when not root: root writes anywhere).
  if (geteuid() != 0) {
    auto ro = dir.file("readonly");
    fs::create_directory(ro);
    auto kept = ro + "/run.tvz.json";
    save_capture(c, kept);
    chmod(ro.c_str(), 0555);
    try {
      save_capture(large_capture(), kept);
      ADD_FAILURE() << "saved into a read-only folder";
    } catch (const CaptureError& e) {
      EXPECT_NE(std::string(e.what()).find("Permission denied"), std::string::npos) << e.what();
    }
    chmod(ro.c_str(), 0755);
    EXPECT_EQ(contents(kept), before);
  }
}

TEST(CaptureAtomicWrite, SaveReplacesAndKeepsPermissions) {
  TempDir dir;
  auto target = dir.file("run.tvz.json");
  save_capture(small_capture(), target);
  chmod(target.c_str(), 0600);
  save_capture(realistic_capture(), target);
  struct stat st {};
  ASSERT_EQ(stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(load_capture(target).pipelines.size(), 3u);
  EXPECT_TRUE(temporaries(dir).empty());
}

// The replay's checks say what they compare with: Thunder's results for a recorded Thunder call.
TEST(PipelineSpecs, ReplayReferenceNamesThunderForThunderCalls) {
  PipelineSpec ours;
  ours.order = {"jit", "ddp"};
  EXPECT_EQ(ours.reference(), "LibTorch eager");
  PipelineSpec thunder;
  thunder.order = {"thunder.jit", "DDPTransform"};
  EXPECT_EQ(thunder.reference(), "Lightning Thunder's results");
}
