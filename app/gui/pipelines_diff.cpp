#include "gui/pipelines_diff.h"

#include <imgui.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>

#include "gui/diff_panel.h"
#include "gui/theme.h"

namespace tv::gui {
namespace {

bool row_differs(const AlignedRow& row) {
  for (const auto& c : row.cells)
    if (!c || is_change(c->kind)) return true;
  return false;
}

// The stage of `pass` (the last one of that name) of the pipeline's stages of `kind`; its final
// stage when `pass` is empty; stage -1 when there is none.
StageRef stage_of(const Session& s, int pipeline, TraceKind kind, const std::string& pass) {
  const auto& list = s.pipeline(pipeline)->stages.of(kind);
  StageRef ref{pipeline, kind, -1};
  for (int i = static_cast<int>(list.size()) - 1; i >= 0 && ref.stage < 0; --i)
    if (pass.empty() || list[i].pass == pass) ref.stage = i;
  return ref;
}

std::string column_title(const Session& s, const StageRef& ref, bool base) {
  std::string title = "P" + std::to_string(ref.pipeline) + " " + s.pipeline(ref.pipeline)->spec.label();
  if (base) title += " (base)";
  if (ref.stage >= 0)
    title += ", stage " + std::to_string(ref.stage) + " " + s.pipeline(ref.pipeline)->stages.of(ref.kind)[ref.stage].pass;
  return title;
}

}  // namespace

int PipelinesDiff::pair_of(int column) const {
  auto at = std::find(column_of_.begin(), column_of_.end(), column);
  return at == column_of_.end() || traces_.empty() ? -1 : static_cast<int>(at - column_of_.begin());
}

void PipelinesDiff::draw_selectors(Session& s) {
  DiffSelection& d = s.diff;
  const Capture& c = *s.capture;
  d.base = std::clamp(d.base, 0, static_cast<int>(c.pipelines.size()) - 1);
  pipeline_combo("base", c, &d.base);
  ImGui::SameLine();
  kind_combo("kind", &d.kind);
  ImGui::SameLine();
  // The passes any pipeline ran for this kind, in the order they first appear.
  std::vector<std::string> passes;
  std::set<std::string> seen;
  for (const auto& p : c.pipelines)
    for (const auto& st : p.stages.of(d.kind))
      if (seen.insert(st.pass).second) passes.push_back(st.pass);
  ImGui::SetNextItemWidth(260);
  if (ImGui::BeginCombo("at pass", d.pass.empty() ? "(each pipeline's final stage)" : d.pass.c_str())) {
    if (ImGui::Selectable("(each pipeline's final stage)", d.pass.empty())) d.pass.clear();
    for (const auto& pass : passes)
      if (ImGui::Selectable(pass.c_str(), pass == d.pass)) d.pass = pass;
    ImGui::EndCombo();
  }
  ImGui::Checkbox("fold where all agree", &d.fold_unchanged);
}

void PipelinesDiff::draw(Session& s) {
  const Theme& t = theme();
  draw_selectors(s);
  const DiffSelection& d = s.diff;
  const int n = static_cast<int>(s.capture->pipelines.size());
  std::vector<StageRef> columns;
  columns.push_back(stage_of(s, d.base, d.kind, d.pass));
  for (int p = 0; p < n; ++p)
    if (p != d.base) columns.push_back(stage_of(s, p, d.kind, d.pass));
  std::vector<TracePtr> traces;
  std::vector<int> column_of;
  std::string unreadable;
  for (int i = 0; i < static_cast<int>(columns.size()); ++i) {
    if (columns[i].stage < 0) continue;
    TracePtr trace = s.trace(columns[i]);
    if (!trace) {
      unreadable = s.unreadable(columns[i]);
      continue;
    }
    traces.push_back(trace);
    column_of.push_back(i);
  }
  if (!unreadable.empty()) ImGui::TextColored(t.error, "%s", unreadable.c_str());
  if (traces.empty() || column_of.front() != 0) {
    columns_ = columns;
    traces_.clear();
    ImGui::TextColored(t.muted, "the base pipeline P%d has no %s stage%s", d.base,
                       std::string(trace_kind_name(d.kind)).c_str(), d.pass.empty() ? "" : (" '" + d.pass + "'").c_str());
    return;
  }
  bool rebuild = display_folded_ != d.fold_unchanged;
  if (traces != traces_ || columns != columns_) {
    columns_ = std::move(columns);
    traces_ = std::move(traces);
    column_of_ = std::move(column_of);
    PrintOptions options;
    options.depth = 0;  // top-level statements: a column stays readable
    options.headers = false;
    std::vector<const Trace*> all;
    for (const auto& tr : traces_) all.push_back(tr.get());
    aligned_ = align_traces(*traces_.front(), all, options);
    rebuild = true;
  }
  if (rebuild) build_display(d.fold_unchanged);
  draw_summary(s);
  draw_table(s);
}

void PipelinesDiff::draw_summary(const Session& s) const {
  const Theme& t = theme();
  for (size_t i = 1; i < columns_.size(); ++i) {
    std::string title = column_title(s, columns_[i], false);
    const int at = pair_of(static_cast<int>(i));
    if (at < 0) {
      ImGui::TextColored(t.muted, "%s: no such stage", title.c_str());
      continue;
    }
    const TraceDiff& pair = aligned_.pairs[at];
    if (pair.same_program) {
      ImGui::TextColored(t.ok, "%s: same program as the base%s", title.c_str(), pair.same_text ? "" : ", other names");
      continue;
    }
    ImGui::TextColored(t.changed, "%s: ~ changed %d   + added %d   - removed %d   = renamed %d", title.c_str(),
                       pair.count(DiffKind::changed), pair.count(DiffKind::added), pair.count(DiffKind::removed),
                       pair.count(DiffKind::renamed));
  }
}

void PipelinesDiff::build_display(bool fold) {
  std::vector<bool> differs;
  for (const auto& row : aligned_.rows) differs.push_back(row_differs(row));
  display_ = folded_rows(differs, fold);
  display_folded_ = fold;
}

void PipelinesDiff::draw_table(Session& s) {
  const Theme& t = theme();
  const int n = static_cast<int>(traces_.size());
  const auto flags = ImGuiTableFlags_Borders | ImGuiTableFlags_ScrollX | ImGuiTableFlags_ScrollY |
                     ImGuiTableFlags_Resizable | ImGuiTableFlags_SizingFixedFit;
  if (!ImGui::BeginTable("pipelines", n, flags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  const float width = std::max(360.0f, (ImGui::GetContentRegionAvail().x - 8) / static_cast<float>(n));
  for (int i = 0; i < n; ++i)
    ImGui::TableSetupColumn(column_title(s, columns_[column_of_[i]], i == 0).c_str(), ImGuiTableColumnFlags_WidthFixed,
                            width);
  ImGui::TableHeadersRow();
  std::optional<StageRef> show;
  int statement = -1;
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(display_.size()));
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      ImGui::TableNextRow();
      const int r = display_[i];
      if (r < 0) {
        ImGui::TableNextColumn();
        ImGui::TextDisabled("... %d statement%s where every pipeline agrees", -r, r == -1 ? "" : "s");
        continue;
      }
      const AlignedRow& row = aligned_.rows[r];
      for (int k = 0; k < n; ++k) {
        ImGui::TableNextColumn();
        const auto& cell = row.cells[k];
        if (!cell || (cell->kind == DiffKind::removed && k > 0)) {
          if (cell) ImGui::TableSetBgColor(ImGuiTableBgTarget_CellBg, kind_background(DiffKind::removed));
          if (cell) ImGui::TextColored(t.removed, "-  (not here)");
          continue;
        }
        if (ImU32 bg = kind_background(cell->kind)) ImGui::TableSetBgColor(ImGuiTableBgTarget_CellBg, bg);
        const std::string& text = cell->right_text;
        ImGui::PushID(r);
        ImGui::PushID(k);
        ImGui::PushStyleColor(ImGuiCol_Text, k == 0 ? ImGui::GetStyle().Colors[ImGuiCol_Text] : kind_colour(cell->kind));
        std::string label = std::string(k == 0 ? " " : diff_mark(cell->kind)) + " " + text;
        if (ImGui::Selectable(label.c_str())) show = columns_[column_of_[k]], statement = cell->right;
        ImGui::PopStyleColor();
        s.targets.mark_last_item("diff/pipelines/" + std::to_string(k) + "/" + std::to_string(r));
        if (ImGui::IsItemHovered()) {
          if (cell->kind == DiffKind::changed) ImGui::SetTooltip("base: %s\n(click: show in the trace)", cell->left_text.c_str());
          else ImGui::SetTooltip("click: show in the trace");
        }
        ImGui::PopID();
        ImGui::PopID();
      }
    }
  }
  ImGui::EndTable();
  if (show) {
    s.select_stage(*show);
    s.jump_to_statement = statement;
    s.select_panel(Panel::trace);
  }
}

}  // namespace tv::gui
