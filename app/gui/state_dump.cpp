#include "gui/state_dump.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "gui/app.h"

namespace tv::gui {
namespace {

using nlohmann::json;

json stage_json(const Session& s, const StageRef& r) {
  json j{{"pipeline", r.pipeline}, {"kind", std::string(trace_kind_name(r.kind))}, {"stage", r.stage}};
  if (const Stage* st = s.stage(r)) {
    j["pass"] = st->pass;
    j["changed"] = st->changed;
  }
  return j;
}

json trace_json(const App& app) {
  const Session& s = app.session;
  const Stage* st = s.stage(s.selected);
  if (!st || !st->trace) return nullptr;
  int depth = std::clamp(app.trace.depth, 0, max_subsymbol_depth(*st->trace));
  TraceText text = build_trace_text(*st->trace, depth);
  json lines = json::array(), visible = json::array();
  for (size_t i = 0; i < text.lines.size() && i < 40; ++i) lines.push_back(text.lines[i].text);
  for (size_t i = app.trace.first_visible; i < text.lines.size() && visible.size() < 20; ++i)
    visible.push_back(text.lines[i].text);
  json j{{"depth", depth},
         {"line_count", text.lines.size()},
         {"first_lines", lines},
         {"first_visible_line", app.trace.first_visible},
         {"visible_lines", visible},
         {"marked_line", app.trace.marked_line},
         {"search", {{"open", app.trace.search_open}, {"query", app.trace.query}, {"matches", app.trace.matches.size()},
                     {"current", app.trace.match}}}};
  if (const TraceText* shown = app.trace.text(); shown && app.trace.selected_proxy >= 0 &&
                                                 app.trace.selected_proxy < static_cast<int>(shown->proxies.size()))
    j["selected_proxy"] = shown->proxies[app.trace.selected_proxy]->name;
  return j;
}

}  // namespace

json dump_state(const App& app) {
  const Session& s = app.session;
  json j;
  j["frames"] = app.frames;
  j["source"] = s.source;
  j["busy"] = s.worker.busy();
  j["error"] = s.error;
  j["panel"] = panel_name(s.panel);
  j["order"] = app.order.order;
  j["previous_order"] = app.order.previous ? json(app.order.previous->order) : json(nullptr);
  j["world_size"] = app.order.world_size;
  j["device"] = app.order.device;
  j["capture_at_jit"] = app.order.capture_at_jit;
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
                         {"verdict", pipeline_verdict(c, p)},
                         {"error", rec.error},
                         {"rule", rec.rule},
                         {"replayed", rec.replay.has_value()},
                         {"stages", stages}});
  }
  json comparisons = json::array();
  for (const auto& cmp : c.comparisons)
    comparisons.push_back({{"left", cmp.left}, {"right", cmp.right}, {"verdict", cmp.verdict}});
  j["capture"] = {{"model", c.model.name}, {"pipelines", pipelines}, {"comparisons", comparisons},
                  {"rules", c.rules.has_value()}};
  j["selected"] = stage_json(s, s.selected);
  j["trace"] = trace_json(app);
  json diff{{"across_pipelines", s.diff.across_pipelines}, {"unified", s.diff.unified},
            {"left", stage_json(s, s.diff.left)}, {"right", stage_json(s, s.diff.right)}};
  if (const TraceDiff* d = app.diff.current()) {
    diff["same_program"] = d->same_program;
    diff["rows"] = d->statements.size();
    for (DiffKind k : {DiffKind::same, DiffKind::renamed, DiffKind::changed, DiffKind::added, DiffKind::removed})
      diff["count"][std::string(diff_kind_name(k))] = d->count(k);
  }
  j["diff"] = diff;
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
