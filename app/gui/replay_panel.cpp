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
  if (!parse_trace_kind(timing.trace, &kind)) return;
  const auto* p = s.pipeline(pipeline);
  if (!p || p->stages.of(kind).empty()) return;
  s.select_stage({pipeline, kind, static_cast<int>(p->stages.of(kind).size()) - 1});
  s.jump_to_statement = timing.index;
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
  ImGui::SameLine();
  ImGui::SetNextItemWidth(120);
  ImGui::SliderInt("rank", &rank, 0, static_cast<int>(ranks.size()) - 1);
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

}  // namespace tv::gui
