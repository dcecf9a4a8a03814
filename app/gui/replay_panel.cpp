#include "gui/replay_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "gui/theme.h"

namespace tv::gui {
namespace {

void checks_table(const char* id, const std::vector<TensorCheck>& checks) {
  const Theme& t = theme();
  if (checks.empty()) {
    ImGui::TextColored(t.muted, "(none)");
    return;
  }
  if (!ImGui::BeginTable(id, 6, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit))
    return;
  for (const char* h : {"name", "shape", "max abs", "max rel", "tolerance", "verdict"}) ImGui::TableSetupColumn(h);
  ImGui::TableHeadersRow();
  for (const auto& c : checks) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(c.name.c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%s %s", shape_text(c.stats.shape).c_str(), std::string(short_name(c.stats.dtype)).c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%.3g", c.max_abs);
    ImGui::TableNextColumn();
    ImGui::Text("%.3g", c.max_rel);
    ImGui::TableNextColumn();
    ImGui::Text("%.1g", c.tolerance);
    ImGui::TableNextColumn();
    ImGui::TextColored(c.pass ? t.ok : t.error, "%s", c.pass ? "pass" : "FAIL");
  }
  ImGui::EndTable();
}

}  // namespace

void ReplayPanel::jump_to(Session& s, int pipeline, const SymbolTiming& timing) {
  TraceKind kind;
  if (parse_trace_kind(timing.trace, &kind)) jump_to(s, pipeline, kind, timing.index);
}

void ReplayPanel::jump_to(Session& s, int pipeline, TraceKind kind, int statement) {
  const auto* p = s.pipeline(pipeline);
  if (!p || p->stages.of(kind).empty()) return;
  s.select_stage({pipeline, kind, static_cast<int>(p->stages.of(kind).size()) - 1});
  s.jump_to_statement = statement;
  s.select_panel(Panel::trace);
}

void ReplayPanel::draw(Session& s) {
  const Theme& t = theme();
  slowest.clear();
  cuda_graph_line.clear();
  if (!s.capture || s.capture->pipelines.empty()) {
    ImGui::TextColored(t.muted, "no capture");
    return;
  }
  const Capture& c = *s.capture;
  pipeline = std::clamp(pipeline, 0, static_cast<int>(c.pipelines.size()) - 1);
  ImGui::SetNextItemWidth(260);
  std::string preview = "P" + std::to_string(pipeline) + " " + c.pipelines[pipeline].spec.label();
  if (ImGui::BeginCombo("pipeline", preview.c_str())) {
    for (int p = 0; p < static_cast<int>(c.pipelines.size()); ++p) {
      std::string item = "P" + std::to_string(p) + " " + c.pipelines[p].spec.label();
      if (ImGui::Selectable(item.c_str(), p == pipeline)) pipeline = p, rank = 0;
    }
    ImGui::EndCombo();
  }
  const PipelineRecord& rec = c.pipelines[pipeline];
  if (!rec.replay || rec.replay->ranks.empty()) {
    ImGui::TextColored(t.muted, "this pipeline was not replayed (no results in the capture)%s",
                       rec.error.empty() ? "" : "; it failed:");
    if (!rec.error.empty()) ImGui::TextColored(t.error, "%s", rec.error.c_str());
    return;
  }
  const auto& ranks = rec.replay->ranks;
  rank = std::clamp(rank, 0, static_cast<int>(ranks.size()) - 1);
  if (!side_by_side) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(120);
    ImGui::SliderInt("rank", &rank, 0, static_cast<int>(ranks.size()) - 1);
  }
  ImGui::SameLine();
  ImGui::Checkbox("ranks side by side", &side_by_side);
  s.targets.mark_last_item("replay/side-by-side");
  ImGui::SameLine();
  bool pass = rec.replay->pass();
  ImGui::TextColored(pass ? t.ok : t.error, "replay %s over %zu rank(s)", pass ? "pass" : "FAIL", ranks.size());
  const RankResult& r = ranks[rank];
  if (!r.error.empty()) ImGui::TextColored(t.error, "rank %d error: %s", r.rank, r.error.c_str());
  if (!r.first_non_finite.empty())
    ImGui::TextColored(t.error, "first NaN/Inf produced by: %s", r.first_non_finite.c_str());
  if (r.cuda_graph) {
    cuda_graph_line = "CUDA graph: " + r.cuda_graph->describe();
    ImGui::TextColored(r.cuda_graph->matches() ? t.ok : t.error, "%s", cuda_graph_line.c_str());
  }
  if (side_by_side) {
    if (const RankTable* table = s.rank_table(pipeline)) draw_side_by_side(s, *table);
    return;
  }
  ImGui::BeginChild("checks", ImVec2(ImGui::GetContentRegionAvail().x * 0.5f, 0), true);
  draw_checks(r, rec.spec.reference());
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("timings", ImVec2(0, 0), true);
  draw_timings(s, r);
  ImGui::EndChild();
}

void ReplayPanel::draw_checks(const RankResult& r, const std::string& reference) const {
  ImGui::Text("Outputs (against %s)", reference.c_str());
  checks_table("outputs", r.outputs);
  ImGui::Spacing();
  ImGui::Text("Gradients");
  checks_table("gradients", r.gradients);
}

void ReplayPanel::draw_timings(Session& s, const RankResult& r) {
  const Theme& t = theme();
  std::vector<const SymbolTiming*> timings;
  ImGui::RadioButton("forward", &kind, 0);
  ImGui::SameLine();
  ImGui::RadioButton("backward", &kind, 1);
  const char* wanted = kind == 0 ? "forward" : "backward";
  for (const auto& tm : r.timings)
    if (tm.trace == wanted) timings.push_back(&tm);
  if (timings.empty()) {
    ImGui::TextColored(t.muted, "no %s timings", wanted);
    return;
  }
  double total = 0, longest = 0;
  for (const auto* tm : timings) total += tm->microseconds, longest = std::max(longest, tm->microseconds);

  ImGui::Text("Slowest bound symbols (click: show in trace), total %.1f us", total);
  std::vector<const SymbolTiming*> by_time = timings;
  std::stable_sort(by_time.begin(), by_time.end(), [](auto* a, auto* b) { return a->microseconds > b->microseconds; });
  by_time.resize(std::min<size_t>(by_time.size(), 8));
  std::optional<SymbolTiming> jump;  // after the list: jumping changes the selection the list reads
  for (size_t i = 0; i < by_time.size(); ++i) {
    const SymbolTiming& tm = *by_time[i];
    std::string label = std::to_string(tm.index) + " " + tm.symbol + (tm.output.empty() ? "" : " -> " + tm.output);
    char time[32];
    std::snprintf(time, sizeof time, "%9.1f us", tm.microseconds);
    ImGui::PushID(static_cast<int>(i));
    if (ImGui::Selectable((std::string(time) + "  " + label).c_str())) jump = tm;
    s.targets.mark_last_item("replay/slowest/" + std::to_string(i));
    ImGui::PopID();
    slowest.push_back(tm);
  }
  if (jump) jump_to(s, pipeline, *jump);
  ImGui::Separator();
  ImGui::Text("Time per bound symbol (%s)", timings.front()->device_timer ? "CUDA events" : "host clock");
  // The bar chart: one bar per bound symbol in trace order, drawn with ImDrawList.
  ImGui::BeginChild("bars");
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float row_h = ImGui::GetTextLineHeightWithSpacing();
  const float label_w = 260;
  const float bar_w = std::max(40.0f, ImGui::GetContentRegionAvail().x - label_w - 90);
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(0, 0));
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(timings.size()), row_h);
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const SymbolTiming& tm = *timings[i];
      ImVec2 pos = ImGui::GetCursorScreenPos();
      std::string label = std::to_string(tm.index) + " " + tm.symbol;
      draw->PushClipRect(pos, ImVec2(pos.x + label_w - 6, pos.y + row_h), true);
      draw->AddText(pos, ImGui::GetColorU32(ImGuiCol_Text), label.c_str());
      draw->PopClipRect();
      float w = longest > 0 ? static_cast<float>(tm.microseconds / longest) * bar_w : 0;
      draw->AddRectFilled(ImVec2(pos.x + label_w, pos.y + 2), ImVec2(pos.x + label_w + std::max(w, 1.0f), pos.y + row_h - 2),
                          t.bar);
      char value[32];
      std::snprintf(value, sizeof value, "%.1f us", tm.microseconds);
      draw->AddText(ImVec2(pos.x + label_w + w + 6, pos.y), ImGui::GetColorU32(ImGuiCol_Text), value);
      ImGui::PushID(i);
      if (ImGui::InvisibleButton("bar", ImVec2(label_w + bar_w + 80, row_h))) jump_to(s, pipeline, tm);
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s -> %s: %.1f us (click: show in trace)", tm.symbol.c_str(),
                                                    tm.output.c_str(), tm.microseconds);
      ImGui::PopID();
    }
  }
  ImGui::PopStyleVar();
  ImGui::EndChild();
}

void ReplayPanel::draw_side_by_side(Session& s, const RankTable& table) {
  const Theme& t = theme();
  if (!table.unreadable.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, t.error);
    ImGui::TextWrapped("%s", table.describe_ranks().c_str());
    ImGui::PopStyleColor();
    return;
  }
  std::optional<size_t> jump;  // after the table: jumping changes the selection it reads
  auto verdict_line = [&](const std::string& text, const std::optional<size_t>& first, bool neutral,
                          const char* target) {
    ImGui::PushStyleColor(ImGuiCol_Text, first ? t.error : neutral ? t.muted : t.ok);
    ImGui::TextWrapped("%s", text.c_str());
    ImGui::PopStyleColor();
    if (!first) return;
    ImGui::PushID(target);
    if (ImGui::SmallButton("show it in the trace")) jump = first;
    s.targets.mark_last_item(target);
    ImGui::PopID();
  };
  verdict_line(table.describe_ranks(), table.first_ranks_part, table.invariant_rows == 0, "replay/ranks/first-part");
  verdict_line(table.describe_eager(), table.first_eager_part, !table.has_eager, "replay/ranks/first-eager-part");
  ImGui::Checkbox("only the values every rank must share", &shared_only);
  s.targets.mark_last_item("replay/ranks/shared-only");

  std::vector<size_t> shown;
  for (size_t i = 0; i < table.rows.size(); ++i)
    if (!shared_only || table.rows[i].invariant) shown.push_back(i);
  const int columns = 4 + table.ranks + 1;
  const auto flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollX |
                     ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("ranks", columns, flags)) return;
  ImGui::TableSetupScrollFreeze(3, 1);
  ImGui::TableSetupColumn("statement");
  ImGui::TableSetupColumn("value");
  ImGui::TableSetupColumn("shared");
  ImGui::TableSetupColumn("shape");
  for (int r = 0; r < table.ranks; ++r) ImGui::TableSetupColumn(("rank " + std::to_string(r) + ": mean [min, max]").c_str());
  ImGui::TableSetupColumn("eager (each rank's own)");
  ImGui::TableHeadersRow();
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(shown.size()));
  while (clipper.Step()) {
    for (int k = clipper.DisplayStart; k < clipper.DisplayEnd; ++k) {
      const RankRow& row = table.rows[shown[k]];
      ImGui::TableNextRow();
      if (row.ranks_part || row.eager_parts)
        ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, t.removed_bg);
      ImGui::TableNextColumn();
      std::string label = std::string(row.kind == TraceKind::forward ? "fwd " : "bwd ") + std::to_string(row.statement) +
                          " " + row.symbol;
      ImGui::PushID(static_cast<int>(shown[k]));
      if (ImGui::Selectable(label.c_str(), false, ImGuiSelectableFlags_SpanAllColumns)) jump = shown[k];
      s.targets.mark_last_item("replay/ranks/row/" + std::to_string(shown[k]));
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("click: show this statement in the trace");
      ImGui::PopID();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(row.proxy.c_str());
      ImGui::TableNextColumn();
      if (row.invariant) {
        char spread[48];
        std::snprintf(spread, sizeof spread, row.ranks_part ? "PARTS %.2g" : "yes", row.spread);
        ImGui::TextColored(row.ranks_part ? t.error : t.ok, "%s", spread);
      } else {
        ImGui::TextColored(t.muted, "-");
      }
      ImGui::TableNextColumn();
      const TensorStats* any = nullptr;
      for (const auto& st : row.stats)
        if (st && !any) any = &*st;
      if (any) ImGui::Text("%s %s", shape_text(any->shape).c_str(), std::string(short_name(any->dtype)).c_str());
      for (int r = 0; r < table.ranks; ++r) {
        ImGui::TableNextColumn();
        const auto& st = row.stats[r];
        if (!st) {
          ImGui::TextColored(t.muted, "(not recorded)");
          continue;
        }
        bool parted = row.ranks_part && row.spread_rank == r;
        ImGui::TextColored(parted ? t.error : ImGui::GetStyle().Colors[ImGuiCol_Text], "%.4g [%.4g, %.4g]%s", st->mean,
                           st->min, st->max, st->nan_count + st->inf_count ? " non-finite" : "");
      }
      ImGui::TableNextColumn();
      if (row.eager.empty()) continue;
      double worst = 0;
      int failed = -1;
      for (size_t r = 0; r < row.eager.size(); ++r) {
        if (!row.eager[r]) continue;
        worst = std::max(worst, row.eager[r]->max_rel);
        if (!row.eager[r]->pass && failed < 0) failed = static_cast<int>(r);
      }
      const auto& first = row.eager[failed >= 0 ? failed : 0];
      std::string name = first ? first->name : "";
      if (failed >= 0)
        ImGui::TextColored(t.error, "%s FAIL on rank %d, max rel %.2g", name.c_str(), failed, worst);
      else if (first && first->reference)
        ImGui::TextColored(t.ok, "%s pass, max rel %.2g; rank 0's %.4g [%.4g, %.4g]", name.c_str(), worst,
                           first->reference->mean, first->reference->min, first->reference->max);
      else
        ImGui::TextColored(t.ok, "%s pass, max rel %.2g", name.c_str(), worst);
    }
  }
  ImGui::EndTable();
  if (jump) jump_to(s, pipeline, table.rows[*jump].kind, table.rows[*jump].statement);
}

}  // namespace tv::gui
