#include "gui/stage_browser.h"

#include <algorithm>
#include <cfloat>
#include <string>

#include "gui/theme.h"

namespace tv::gui {
namespace {

std::string kind_label(TraceKind k) { return std::string(trace_kind_name(k)); }

void badge(bool changed) {
  const Theme& t = theme();
  ImGui::TextColored(changed ? t.changed : t.muted, "%s", changed ? "changed" : "same");
}

}  // namespace

bool StageBrowser::shows(const Stage& stage, int index) const {
  if (hide_unchanged && index > 0 && !stage.changed) return false;
  return filter.PassFilter(stage.pass.c_str());
}

std::vector<StageRef> StageBrowser::visible_stages(const Session& s, int pipeline) const {
  std::vector<StageRef> out;
  const auto* p = s.pipeline(pipeline);
  if (!p) return out;
  for (TraceKind k : kTraceKinds) {
    const auto& list = p->stages.of(k);
    for (int i = 0; i < static_cast<int>(list.size()); ++i)
      if (shows(list[i], i)) out.push_back({pipeline, k, i});
  }
  return out;
}

void StageBrowser::step(Session& s, int delta) {
  auto list = visible_stages(s, s.selected.pipeline);
  if (list.empty()) return;
  auto it = std::find(list.begin(), list.end(), s.selected);
  int at = it == list.end() ? (delta > 0 ? -1 : static_cast<int>(list.size())) : static_cast<int>(it - list.begin());
  int next = std::clamp(at + delta, 0, static_cast<int>(list.size()) - 1);
  s.select_stage(list[next]);
  scroll_pending = true;
}

void StageBrowser::draw(Session& s) {
  const Theme& t = theme();
  ImGui::TextUnformatted("Stages");
  ImGui::SameLine();
  ImGui::TextColored(t.muted, "(Up/Down to step)");
  filter.Draw("filter##stages", ImGui::GetContentRegionAvail().x - 50);
  ImGui::Checkbox("hide unchanged", &hide_unchanged);
  ImGui::Separator();

  // Keys: only when no text field has the keyboard.
  ImGuiIO& io = ImGui::GetIO();
  if (!io.WantTextInput && s.capture) {
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_DownArrow))) step(s, +1);
    if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_UpArrow))) step(s, -1);
  }

  ImGui::BeginChild("stage-list");
  if (!s.capture) {
    ImGui::TextColored(t.muted, "%s", s.worker.busy() ? "loading..." : "no capture");
    ImGui::EndChild();
    return;
  }
  const auto& pipelines = s.capture->pipelines;
  if (pipelines.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, t.muted);
    ImGui::TextWrapped("%s", s.capture->rules ? "No pipelines: this capture holds a rules matrix (Rules tab)."
                                              : "This capture holds no pipelines.");
    ImGui::PopStyleColor();
  }
  for (int p = 0; p < static_cast<int>(pipelines.size()); ++p) {
    const auto& rec = pipelines[p];
    std::string verdict = pipeline_outcome(*s.capture, p);
    std::string header = "P" + std::to_string(p) + "  " + rec.spec.label() + "  [" + verdict + "]###pipeline" +
                         std::to_string(p);
    ImGui::PushStyleColor(ImGuiCol_Text, verdict_colour(verdict));
    bool open = ImGui::TreeNodeEx(header.c_str(), ImGuiTreeNodeFlags_DefaultOpen);
    ImGui::PopStyleColor();
    if (!open) continue;
    for (const auto& reason : rec.outcome.reasons) ImGui::TextColored(t.error, "%s", reason.c_str());
    for (TraceKind k : kTraceKinds) {
      const auto& list = rec.stages.of(k);
      if (list.empty()) continue;
      std::string kind_header = kind_label(k) + " (" + std::to_string(list.size()) + ")";
      if (!ImGui::TreeNodeEx(kind_header.c_str(), ImGuiTreeNodeFlags_DefaultOpen)) continue;
      for (int i = 0; i < static_cast<int>(list.size()); ++i) {
        const Stage& st = list[i];
        if (!shows(st, i)) continue;
        StageRef ref{p, k, i};
        bool selected = s.selected == ref;
        ImGui::PushID(i);
        std::string label = std::to_string(i) + " " + st.pass;
        const float x = ImGui::GetCursorPosX(), avail = ImGui::GetContentRegionAvail().x;
        const float columns = ImGui::CalcTextSize(s.source_focus ? "00000.0 ms changed 0000" : "00000.0 ms changed").x + 8;
        if (ImGui::Selectable(label.c_str(), selected, 0, ImVec2(avail - columns, 0))) s.select_stage(ref);
        if (s.targets.enabled)
          s.targets.mark_last_item("stages/" + std::to_string(p) + "/" + std::string(trace_kind_name(k)) + "/" +
                                   std::to_string(i));
        if (ImGui::IsItemHovered()) {
          const auto* m = s.memory(ref);
          if (m && m->saved_for_backward)
            ImGui::SetTooltip("%s\npeak live %.3f MB, saved for backward %.3f MB", st.pass.c_str(), m->peak_live / 1e6,
                              m->saved_for_backward / 1e6);
          else if (m)
            ImGui::SetTooltip("%s\npeak live %.3f MB", st.pass.c_str(), m->peak_live / 1e6);
          else
            ImGui::SetTooltip("%s", st.pass.c_str());
        }
        if (selected && scroll_pending) {
          ImGui::SetScrollHereY();
          scroll_pending = false;
        }
        ImGui::SameLine(x + avail - columns + 4);
        ImGui::TextColored(t.muted, "%7.1f ms", st.milliseconds);
        ImGui::SameLine();
        badge(i == 0 || st.changed);
        if (s.source_focus) {  // statements of this stage from the followed source line
          const size_t n = s.from_source(ref).size();
          ImGui::SameLine();
          ImGui::TextColored(n ? ImGui::ColorConvertU32ToFloat4(t.source_link | IM_COL32_A_MASK) : t.muted, "%4zu", n);
          if (ImGui::IsItemHovered())
            ImGui::SetTooltip("%zu statement%s from %s:%d", n, n == 1 ? "" : "s", s.source_focus->line.file.c_str(),
                              s.source_focus->line.line);
        }
        ImGui::PopID();
      }
      ImGui::TreePop();
    }
    ImGui::TreePop();
  }
  ImGui::EndChild();
}

// Peak live megabytes across the stages of kind `k`, one small plot per pipeline (what remat and
// the del placement changed, at a glance).
static void draw_memory_plots(const Session& s, TraceKind k) {
  const auto& pipelines = s.capture->pipelines;
  for (int p = 0; p < static_cast<int>(pipelines.size()); ++p) {
    std::vector<float> peaks;
    for (int i = 0; i < static_cast<int>(pipelines[p].stages.of(k).size()); ++i)
      if (const auto* m = s.memory({p, k, i})) peaks.push_back(static_cast<float>(m->peak_live / 1e6));
    if (peaks.size() < 2) continue;
    std::string label = "P" + std::to_string(p) + " " + kind_label(k) + ": peak live MB by stage";
    ImGui::PlotLines(("##memory" + std::to_string(p) + kind_label(k)).c_str(), peaks.data(), static_cast<int>(peaks.size()),
                     0, label.c_str(), 0.0f, FLT_MAX, ImVec2(0, 60));
  }
}

void draw_stage_overview(Session& s) {
  const Theme& t = theme();
  if (!s.capture) {
    ImGui::TextColored(t.muted, "no capture");
    return;
  }
  const auto& pipelines = s.capture->pipelines;
  for (TraceKind k : kTraceKinds) {
    size_t rows = 0;
    for (const auto& p : pipelines) rows = std::max(rows, p.stages.of(k).size());
    if (rows == 0) continue;
    ImGui::Text("%s", kind_label(k).c_str());
    int columns = 1 + static_cast<int>(pipelines.size());
    if (!ImGui::BeginTable(("overview-" + kind_label(k)).c_str(), columns,
                           ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp))
      continue;
    ImGui::TableSetupColumn("#", ImGuiTableColumnFlags_WidthFixed, 30);
    for (size_t p = 0; p < pipelines.size(); ++p)
      ImGui::TableSetupColumn(("P" + std::to_string(p) + " " + pipelines[p].spec.label()).c_str());
    ImGui::TableHeadersRow();
    for (size_t r = 0; r < rows; ++r) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("%zu", r);
      for (size_t p = 0; p < pipelines.size(); ++p) {
        ImGui::TableNextColumn();
        const auto& list = pipelines[p].stages.of(k);
        if (r >= list.size()) continue;
        const Stage& st = list[r];
        StageRef ref{static_cast<int>(p), k, static_cast<int>(r)};
        ImGui::PushID(static_cast<int>(p * 10000 + r));
        if (ImGui::Selectable(st.pass.c_str(), s.selected == ref)) s.select_stage(ref);
        ImGui::PopID();
        ImGui::SameLine();
        ImGui::TextColored(t.muted, "%.1f ms", st.milliseconds);
        ImGui::SameLine();
        badge(r == 0 || st.changed);
        if (const auto* m = s.memory(ref)) {
          ImGui::SameLine();
          ImGui::TextColored(t.muted, m->saved_for_backward ? "peak %.2f MB, saved %.2f MB" : "peak %.2f MB",
                             m->peak_live / 1e6, m->saved_for_backward / 1e6);
        }
      }
    }
    ImGui::EndTable();
    draw_memory_plots(s, k);
  }
}

}  // namespace tv::gui
