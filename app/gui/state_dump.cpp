#include "gui/state_dump.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "gui/app.h"
#include "session/assess.h"

namespace tv::gui {
namespace {

using nlohmann::json;

json stage_json(const Session& s, const StageRef& r) {
  json j{{"pipeline", r.pipeline}, {"kind", std::string(trace_kind_name(r.kind))}, {"stage", r.stage}};
  if (const auto* p = s.pipeline(r.pipeline)) j["pipeline_label"] = p->spec.label();
  if (const Stage* st = s.stage(r)) {
    j["pass"] = st->pass;
    j["changed"] = st->changed;
    if (const auto* m = s.memory(r)) {
      j["peak_live_bytes"] = m->peak_live;
      j["saved_for_backward_bytes"] = m->saved_for_backward;
    }
  }
  return j;
}

json stats_json(const TensorStats& st) {
  return {{"shape", st.shape}, {"dtype", std::string(short_name(st.dtype))}, {"min", st.min}, {"max", st.max},
          {"mean", st.mean}, {"nan_count", st.nan_count}, {"inf_count", st.inf_count}};
}

json timing_json(const SymbolTiming& t) {
  return {{"trace", t.trace}, {"index", t.index}, {"symbol", t.symbol}, {"output", t.output},
          {"microseconds", t.microseconds}};
}

json hover_json(const ProxyInfo& info) {
  json ranks = json::array();
  for (const auto& r : info.ranks) {
    json rank{{"rank", r.rank}};
    rank["stats"] = r.stats ? stats_json(*r.stats) : json(nullptr);
    rank["produced_by"] = r.timing ? timing_json(*r.timing) : json(nullptr);
    ranks.push_back(rank);
  }
  return {{"name", info.name}, {"type", info.type}, {"is_tensor", info.is_tensor},
          {"requires_grad", info.requires_grad ? json(*info.requires_grad) : json(nullptr)},
          {"distribution", info.distribution},
          {"definition_line", info.definition_line}, {"lines_naming", info.lines_naming},
          {"replayed", info.replayed}, {"final_stage", info.final_stage}, {"ranks", ranks}};
}

json rules_json(const App& app) {
  const Session& s = app.session;
  if (!s.capture || !s.capture->rules) return nullptr;
  const RulesMatrix& m = *s.capture->rules;
  const RulesPanel& panel = app.rules;
  json drawn = json::array();  // what the last frame drew: nothing unless the panel is in front
  if (s.panel == Panel::rules)
    for (const auto& c : panel.drawn)
      drawn.push_back({{"order", c.order}, {"semantics", c.semantics}, {"verdict", c.verdict},
                       {"label", c.label}, {"colour", c.colour}, {"selected", c.selected}});
  json explanation = nullptr;
  if (auto it = m.explanations.find(panel.shown_rule); s.panel == Panel::rules && it != m.explanations.end())
    explanation = {{"rule", it->first}, {"text", it->second}};
  return {{"model", m.model},
          {"world_size", m.world_size},
          {"transforms", m.transforms},
          {"cells", m.cells.size()},
          {"selected", {{"order", panel.selected}, {"semantics", panel.selected_semantics}}},
          {"pending_open", panel.pending_open},
          {"drawn_cells", drawn},
          {"shown_explanation", explanation}};
}

json rank_row_json(const RankTable& table, const std::optional<size_t>& index) {
  if (!index) return nullptr;
  const RankRow& row = table.rows[*index];
  json eager_failed = json::array();
  for (size_t r = 0; r < row.eager.size(); ++r)
    if (row.eager[r] && !row.eager[r]->pass) eager_failed.push_back(r);
  return {{"row", *index},          {"kind", std::string(trace_kind_name(row.kind))},
          {"statement", row.statement}, {"symbol", row.symbol},
          {"proxy", row.proxy},     {"spread_rank", row.spread_rank},
          {"spread", row.spread},   {"eager_failed_ranks", eager_failed}};
}

// Ranks side by side for the panel's pipeline (computed whether or not the view is shown).
json ranks_json(const App& app) {
  const RankTable* table = app.session.rank_table(app.replay.pipeline);
  if (!table) return nullptr;
  size_t with_eager = 0;
  for (const auto& row : table->rows) with_eager += !row.eager.empty();
  return {{"ranks", table->ranks},
          {"rows", table->rows.size()},
          {"invariant_rows", table->invariant_rows},
          {"rows_with_eager", with_eager},
          {"first_ranks_part", rank_row_json(*table, table->first_ranks_part)},
          {"first_eager_part", rank_row_json(*table, table->first_eager_part)},
          {"ranks_line", table->describe_ranks()},
          {"eager_line", table->describe_eager()}};
}

json replay_json(const App& app) {
  json slowest = json::array();  // as drawn by the last frame, when the panel is in front
  if (app.session.panel == Panel::replay)
    for (const auto& t : app.replay.slowest) slowest.push_back(timing_json(t));
  return {{"pipeline", app.replay.pipeline},
          {"rank", app.replay.rank},
          {"slowest", slowest},
          {"cuda_graph", app.session.panel == Panel::replay ? app.replay.cuda_graph_line : ""},
          {"side_by_side", app.replay.side_by_side},
          {"ranks_table", ranks_json(app)}};
}

// The Diff panel's every-pipeline mode as the last frame drew it.
json pipelines_json(const App& app) {
  const Session& s = app.session;
  const PipelinesDiff& view = app.diff.pipelines;
  json columns = json::array();
  const AlignedTraces* aligned = view.current();
  for (int i = 0; i < static_cast<int>(view.columns().size()); ++i) {
    const StageRef& ref = view.columns()[i];
    json col{{"pipeline", ref.pipeline}, {"stage", ref.stage},
             {"label", s.pipeline(ref.pipeline) ? s.pipeline(ref.pipeline)->spec.label() : ""}};
    if (const int at = view.pair_of(i); aligned && at >= 0) {
      const TraceDiff& pair = aligned->pairs[at];
      col["pass"] = s.stage(ref)->pass;
      col["same_program"] = pair.same_program;
      for (DiffKind k : {DiffKind::renamed, DiffKind::changed, DiffKind::added, DiffKind::removed})
        col["count"][std::string(diff_kind_name(k))] = pair.count(k);
    }
    columns.push_back(col);
  }
  return {{"base", s.diff.base},
          {"kind", std::string(trace_kind_name(s.diff.kind))},
          {"pass", s.diff.pass},
          {"columns", columns},
          {"rows", aligned ? aligned->rows.size() : 0},
          {"displayed_rows", view.displayed_rows()}};
}

json trace_json(const App& app) {
  const Session& s = app.session;
  TracePtr trace = s.trace(s.selected);
  if (!trace) return nullptr;
  int depth = std::clamp(app.trace.depth, 0, max_subsymbol_depth(*trace));
  TraceText text = build_trace_text(*trace, depth);
  json lines = json::array(), visible = json::array();
  for (size_t i = 0; i < text.line_count() && i < 40; ++i) lines.push_back(std::string(text.line(i)));
  for (size_t i = app.trace.first_visible; i < text.line_count() && visible.size() < 20; ++i)
    visible.push_back(std::string(text.line(i)));
  const int marked = app.trace.marked_line;
  json j{{"depth", depth},
         {"line_count", text.line_count()},
         {"first_lines", lines},
         {"first_visible_line", app.trace.first_visible},
         {"last_visible_line", app.trace.first_visible + app.trace.visible_rows - 1},
         {"visible_lines", visible},
         {"marked_line", marked},
         {"marked_text", marked >= 0 && marked < static_cast<int>(text.line_count()) ? json(std::string(text.line(marked)))
                                                                                    : json(nullptr)},
         {"hover", s.panel == Panel::trace && app.trace.hovered ? hover_json(*app.trace.hovered) : json(nullptr)},
         {"search", {{"open", app.trace.search_open}, {"query", app.trace.query}, {"matches", app.trace.matches.size()},
                     {"current", app.trace.match}}}};
  const int failed = app.trace.failed_line;
  j["failed_line"] = failed;
  j["failed_text"] = failed >= 0 && failed < static_cast<int>(text.line_count()) ? json(std::string(text.line(failed))) : json(nullptr);
  if (const TraceText* shown = app.trace.text(); shown && app.trace.selected_proxy >= 0 &&
                                                 app.trace.selected_proxy < static_cast<int>(shown->proxies.size()))
    j["selected_proxy"] = shown->proxies[app.trace.selected_proxy]->name;
  // The followed gradient as the view marks it (lines 0-based, their text, the saved values boxed).
  json linked = json::array(), saved = json::array();
  for (int l : app.trace.gradient_lines)
    if (l < static_cast<int>(text.line_count())) linked.push_back({{"line", l}, {"text", std::string(text.line(l))}});
  if (const TraceText* shown = app.trace.text())
    for (int p : app.trace.saved_proxies)
      if (p < static_cast<int>(shown->proxies.size())) saved.push_back(shown->proxies[p]->name);
  j["gradient_lines"] = linked;
  j["saved_marked"] = saved;
  json from_source = json::array();
  for (int l : app.trace.source_lines)
    if (l < static_cast<int>(text.line_count())) from_source.push_back({{"line", l}, {"text", std::string(text.line(l))}});
  j["source_lines"] = from_source;
  return j;
}

// The followed source line: where the pane read it, and how many statements of each stage of the
// selected pipeline came from it.
json source_json(const App& app) {
  const Session& s = app.session;
  json j{{"note", s.source_note}};
  if (!s.source_focus) return j;
  const SourceLine& l = s.source_focus->line;
  j["file"] = l.file;
  j["line"] = l.line;
  j["code"] = l.code;
  j["read_from"] = app.trace.source_pane.read_from;
  j["code_matches"] = app.trace.source_pane.code_matches;
  j["file_lines_with_statements"] = app.trace.source_pane.statement_lines;
  json stages = json::array();
  if (const auto* p = s.pipeline(s.selected.pipeline))
    for (TraceKind k : kTraceKinds)
      for (int i = 0; i < static_cast<int>(p->stages.of(k).size()); ++i) {
        StageRef ref{s.selected.pipeline, k, i};
        stages.push_back({{"kind", trace_kind_name(k)}, {"stage", i}, {"pass", p->stages.of(k)[i].pass},
                          {"statements", s.from_source(ref).size()}});
      }
  j["stages"] = stages;
  return j;
}

json gradient_json(const Session& s) {
  json j{{"note", s.gradient_note}};
  if (!s.gradient) return j;
  const GradientFocus& g = *s.gradient;
  j["pipeline"] = g.pipeline;
  j["key"] = g.key;
  j["keys"] = g.keys;
  j["fused"] = g.fused;
  j["forward_statement"] = g.forward_statement;
  j["backward_statements"] = g.backward_statements;
  j["saved"] = g.saved;
  return j;
}

}  // namespace

json dump_state(const App& app) {
  const Session& s = app.session;
  json j;
  j["frames"] = app.frames;
  j["drawn_frames"] = app.drawn_frames;
  j["source"] = s.source;
  j["busy"] = s.worker.busy();
  j["error"] = s.error;
  j["panel"] = panel_name(s.panel);
  j["order"] = app.order.order;
  j["previous_order"] = app.order.previous ? json(app.order.previous->order) : json(nullptr);
  j["world_size"] = app.order.world_size;
  j["device"] = app.order.device;
  j["semantics"] = app.order.semantics;
  j["workaround"] = app.order.workaround;
  const Rerun& rerun = s.rerun();
  j["rerun"] = {{"possible", rerun.request.has_value()}, {"rebuilt", rerun.request && rerun.request->model_factory},
                {"note", rerun.note}, {"why_not", rerun.why_not}};
  j["font_warning"] = app.font_warning;
  j["stage_browser"] = {{"hide_unchanged", app.browser.hide_unchanged},
                        {"filter", app.browser.filter.InputBuf},
                        {"visible_stages", app.browser.visible_stages(s, s.selected.pipeline).size()}};
  if (!s.capture) {
    j["capture"] = nullptr;
    return j;
  }
  const Capture& c = *s.capture;
  json pipelines = json::array();
  for (int p = 0; p < static_cast<int>(c.pipelines.size()); ++p) {
    const auto& rec = c.pipelines[p];
    json stages;
    for (TraceKind k : kTraceKinds) stages[std::string(trace_kind_name(k))] = rec.stages.of(k).size();
    pipelines.push_back({{"index", p},
                         {"label", rec.spec.label()},
                         {"order", rec.spec.order},
                         {"world_size", rec.spec.world_size},
                         {"verdict", pipeline_outcome(c, p)},
                         {"line", pipeline_line(c, p)},
                         {"error", rec.error},
                         {"rule", rec.rule},
                         {"replayed", rec.replay.has_value()},
                         {"stages", stages}});
  }
  json comparisons = json::array();
  for (const auto& cmp : c.comparisons)
    comparisons.push_back({{"left", cmp.left},
                           {"right", cmp.right},
                           {"verdict", verdict_name(cmp.verdict)},
                           {"line", comparison_line(c, cmp)}});
  j["capture"] = {{"model", c.model.name}, {"pipelines", pipelines}, {"comparisons", comparisons},
                  {"rules", c.rules.has_value()}};
  j["selected"] = stage_json(s, s.selected);
  j["trace"] = trace_json(app);
  j["gradient"] = gradient_json(s);
  j["source_focus"] = source_json(app);
  json diff{{"across_pipelines", s.diff.across_pipelines}, {"unified", s.diff.unified},
            {"follow_selection", s.diff.follow_selection}, {"fold_unchanged", s.diff.fold_unchanged},
            {"left", stage_json(s, s.diff.left)}, {"right", stage_json(s, s.diff.right)}};
  if (const TraceDiff* d = app.diff.current()) {
    diff["same_program"] = d->same_program;
    json renames = json::array();
    for (size_t i = 0; i < d->renames.size() && i < 20; ++i) renames.push_back({d->renames[i].first, d->renames[i].second});
    diff["renames"] = {{"count", d->renames.size()}, {"first", renames}};
    diff["rows"] = d->statements.size();
    diff["displayed_rows"] = app.diff.displayed_rows();
    int focus = app.diff.focused_row();
    diff["focus_row"] = focus;
    diff["focus_kind"] = focus >= 0 ? std::string(diff_kind_name(d->statements[focus].kind)) : std::string();
    for (DiffKind k : {DiffKind::same, DiffKind::renamed, DiffKind::changed, DiffKind::added, DiffKind::removed})
      diff["count"][std::string(diff_kind_name(k))] = d->count(k);
  }
  if (s.diff.all_pipelines) diff["every_pipeline"] = pipelines_json(app);
  j["diff"] = diff;
  j["rules"] = rules_json(app);
  j["replay"] = replay_json(app);
  return j;
}

void write_state(const App& app, const std::string& path, const std::vector<std::string>& script_log) {
  json j = dump_state(app);
  j["script_log"] = script_log;
  std::ofstream out(path);
  if (!out) throw std::runtime_error(path + ": cannot write the state");
  out << j.dump(2) << "\n";
}

}  // namespace tv::gui
