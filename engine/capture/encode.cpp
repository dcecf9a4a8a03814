#include "capture/encode.h"

#include <cmath>

#include "format/printer.h"
#include "transforms/gradient_links.h"

namespace tv::capture_detail {
namespace {

Json encode_check(const TensorCheck& c) {
  Json j = {{"name", c.name},
            {"stats", encode_tensor_stats(c.stats)},
            {"max_abs", encode_number(c.max_abs)},
            {"max_rel", encode_number(c.max_rel)},
            {"tolerance", encode_number(c.tolerance)},
            {"pass", c.pass}};
  if (c.reference) j["reference"] = encode_tensor_stats(*c.reference);
  if (!c.proxy.empty()) j["proxy"] = c.proxy;
  return j;
}

Json encode_rank(const RankResult& r) {
  Json outputs = Json::array(), gradients = Json::array(), proxies = Json::object(), timings = Json::array();
  for (const auto& c : r.outputs) outputs.push_back(encode_check(c));
  for (const auto& c : r.gradients) gradients.push_back(encode_check(c));
  for (const auto& [name, s] : r.proxies) proxies[name] = encode_tensor_stats(s);
  for (const auto& t : r.timings)
    timings.push_back({{"trace", t.trace},
                       {"index", t.index},
                       {"symbol", t.symbol},
                       {"output", t.output},
                       {"microseconds", encode_number(t.microseconds)},
                       {"device_timer", t.device_timer},
                       {"start_microseconds", encode_number(t.start_microseconds)}});
  Json out = {{"rank", r.rank},
              {"outputs", std::move(outputs)},
              {"gradients", std::move(gradients)},
              {"proxies", std::move(proxies)},
              {"timings", std::move(timings)},
              {"first_non_finite", r.first_non_finite},
              {"error", r.error}};
  if (const auto& g = r.cuda_graph)
    out["cuda_graph"] = {{"ran", g->ran},
                         {"steps", g->steps},
                         {"step_ms", encode_number(g->step_ms)},
                         {"graph_ms", encode_number(g->graph_ms)},
                         {"max_abs_difference", encode_number(g->max_abs_difference)},
                         {"max_relative_difference", encode_number(g->max_relative_difference)},
                         {"error", g->error}};
  return out;
}

void extend(std::vector<StoredLines::Run>& runs, uint32_t id) {
  if (!runs.empty() && runs.back().first + runs.back().count == id)
    ++runs.back().count;
  else
    runs.push_back({id, 1});
}

Json runs_json(const std::vector<StoredLines::Run>& runs) {
  Json out = Json::array();
  for (const auto& r : runs) {
    out.push_back(r.first);
    out.push_back(r.count);
  }
  return out;
}

}  // namespace

uint32_t LineTable::id_of(std::string_view line) {
  if (auto it = ids_.find(line); it != ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(lines_.size());
  ids_.emplace(lines_.emplace_back(line), id);
  return id;
}

Json LineTable::runs_of(std::string_view text) {
  std::vector<StoredLines::Run> runs;
  StoredLines::for_each_line_of(text, [&](std::string_view line) { extend(runs, id_of(line)); });
  return runs_json(runs);
}

Json LineTable::runs_of(const StoredLines& lines) {
  std::vector<StoredLines::Run> runs;
  lines.for_each_line([&](std::string_view line) { extend(runs, id_of(line)); });
  return runs_json(runs);
}

Json LineTable::lines() const {
  Json out = Json::array();
  for (const auto& line : lines_) out.push_back(line);
  return out;
}

Json encode_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

Json encode_stage(const Stage& s, LineTable& table) {
  Json j = {{"pass", s.pass}, {"milliseconds", encode_number(s.milliseconds)}, {"changed", s.changed}};
  if (s.failed()) j["failed_at"] = s.failed_at;
  if (!s.trace) {
    j["lines"] = nullptr;  // a stage without a trace (never made by the engine)
    return j;
  }
  // A trace read from a capture is written back as it was stored (parse and print agree on it).
  const StoredLines* stored = s.trace.stored_lines();
  j["lines"] = stored ? table.runs_of(*stored) : table.runs_of(print_trace(*s.trace));
  Json layouts = Json::object();
  for (const auto& p : s.trace->params)
    if (p.proxy->distribution != Distribution::none)
      layouts[p.proxy->name] = std::string(distribution_name(p.proxy->distribution));
  if (!layouts.empty()) j["distributions"] = std::move(layouts);
  Json links = Json::object();
  for (const auto& [index, key] : gradient_links(*s.trace)) links[std::to_string(index)] = key;
  if (!links.empty()) j["gradient_of"] = std::move(links);
  // Source lines the headers do not imply (ir/source_location.h): what passes moved or made.
  Json sources = Json::object();
  const auto exact = effective_sources(*s.trace), implied = implied_sources(*s.trace);
  for (size_t i = 0; i < exact.size() && i < implied.size(); ++i)
    if (!same_source(exact[i], implied[i])) sources[std::to_string(i)] = exact[i] ? *exact[i] : std::string();
  if (!sources.empty()) j["sources"] = std::move(sources);
  return j;
}

Json encode_stage_history(const StageHistory& h, LineTable& table) {
  Json j = Json::object();
  for (auto k : kTraceKinds) {
    Json list = Json::array();
    for (const auto& s : h.of(k)) list.push_back(encode_stage(s, table));
    j[std::string(trace_kind_name(k))] = std::move(list);
  }
  return j;
}

Json encode_tensor_stats(const TensorStats& s) {
  return {{"shape", s.shape},
          {"dtype", short_name(s.dtype)},
          {"min", encode_number(s.min)},
          {"max", encode_number(s.max)},
          {"mean", encode_number(s.mean)},
          {"nan_count", s.nan_count},
          {"inf_count", s.inf_count}};
}

Json encode_replay(const Replay& r) {
  Json ranks = Json::array();
  for (const auto& rank : r.ranks) ranks.push_back(encode_rank(rank));
  return {{"ranks", std::move(ranks)}};
}

Json encode_comparison(const Comparison& c) {
  Json stages = Json::array(), numbers = Json::array();
  for (const auto& s : c.stages)
    stages.push_back({{"kind", s.kind},
                      {"stage", s.stage},
                      {"left_pass", s.left_pass},
                      {"right_pass", s.right_pass},
                      {"equal", s.equal}});
  for (const auto& n : c.numbers)
    numbers.push_back({{"rank", n.rank},
                       {"name", n.name},
                       {"max_abs", encode_number(n.max_abs)},
                       {"max_rel", encode_number(n.max_rel)},
                       {"pass", n.pass}});
  return {{"left", c.left},
          {"right", c.right},
          {"stages", std::move(stages)},
          {"numbers", std::move(numbers)},
          {"traces_equal", c.traces_equal},
          {"numbers_equal", c.numbers_equal},
          {"verdict", verdict_name(c.verdict)},
          {"why", c.why}};
}

Json encode_rules(const RulesMatrix& m) {
  Json cells = Json::array();
  for (const auto& c : m.cells)
    cells.push_back({{"order", c.order},
                     {"versus", c.versus},
                     {"semantics", c.semantics},
                     {"verdict", verdict_name(c.verdict)},
                     {"outcome", outcome_name(c.outcome)},
                     {"rule", c.rule},
                     {"detail", c.detail}});
  Json explanations = Json::object();
  for (const auto& [k, v] : m.explanations) explanations[k] = v;
  return {{"model", m.model},
          {"world_size", m.world_size},
          {"transforms", m.transforms},
          {"semantics", m.semantics},
          {"cells", std::move(cells)},
          {"explanations", std::move(explanations)}};
}

Json encode_model(const ModelRecord& m) {
  Json params = Json::object();
  for (const auto& [k, v] : m.params) params[k] = v;
  Json parameters = Json::array();
  for (const auto& p : m.parameters)
    parameters.push_back({{"name", p.name}, {"shape", p.shape}, {"dtype", short_name(p.dtype)}});
  Json j = {{"name", m.name}, {"params", std::move(params)}, {"parameters", std::move(parameters)}};
  if (!m.tensors.empty()) j["tensors"] = m.tensors;
  return j;
}

Json encode_pipeline(const PipelineRecord& p, LineTable& table) {
  Json spec = {{"order", p.spec.order},
               {"semantics", p.spec.semantics},
               {"workaround", p.spec.workaround},
               {"world_size", p.spec.world_size},
               {"device", p.spec.device}};
  if (p.spec.shard_group > 0) spec["shard_group"] = p.spec.shard_group;
  Json outcome = {{"kind", outcome_name(p.outcome.kind)}, {"rule", p.outcome.rule}, {"reasons", p.outcome.reasons}};
  Json j = {{"spec", std::move(spec)},
            {"error", p.error},
            {"rule", p.rule},
            {"outcome", std::move(outcome)},
            {"stages", encode_stage_history(p.stages, table)}};
  j["replay"] = p.replay ? encode_replay(*p.replay) : Json(nullptr);
  return j;
}

Json encode_capture(const Capture& c) {
  LineTable table;
  Json pipelines = Json::array(), comparisons = Json::array();
  for (const auto& p : c.pipelines) pipelines.push_back(encode_pipeline(p, table));
  for (const auto& cmp : c.comparisons) comparisons.push_back(encode_comparison(cmp));
  Json j = Json::object();
  j["format"] = kCaptureFormat;
  j["version"] = kCaptureVersion;
  j["tool_version"] = c.tool_version;
  j["model"] = encode_model(c.model);
  j["pipelines"] = std::move(pipelines);
  j["comparisons"] = std::move(comparisons);
  if (c.rules) j["rules"] = encode_rules(*c.rules);
  j["lines"] = table.lines();
  return j;
}

}  // namespace tv::capture_detail
