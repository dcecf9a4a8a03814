#include "gui/diff_panel.h"

#include <imgui.h>

#include <algorithm>
#include <string>

#include "gui/theme.h"

namespace tv::gui {

ImVec4 kind_colour(DiffKind k) {
  const Theme& t = theme();
  switch (k) {
    case DiffKind::same: return t.muted;
    case DiffKind::renamed: return t.renamed;
    case DiffKind::changed: return t.changed;
    case DiffKind::added: return t.added;
    case DiffKind::removed: return t.removed;
  }
  return t.muted;
}

ImU32 kind_background(DiffKind k) {
  const Theme& t = theme();
  switch (k) {
    case DiffKind::changed: return t.changed_bg;
    case DiffKind::added: return t.added_bg;
    case DiffKind::removed: return t.removed_bg;
    default: return 0;
  }
}

// A combo over the pipelines of the capture.
void pipeline_combo(const char* label, const Capture& c, int* index) {
  std::string preview = "P" + std::to_string(*index) + " " + c.pipelines[*index].spec.label();
  ImGui::SetNextItemWidth(200);
  if (!ImGui::BeginCombo(label, preview.c_str())) return;
  for (int p = 0; p < static_cast<int>(c.pipelines.size()); ++p) {
    std::string item = "P" + std::to_string(p) + " " + c.pipelines[p].spec.label();
    if (ImGui::Selectable(item.c_str(), p == *index)) *index = p;
  }
  ImGui::EndCombo();
}

void kind_combo(const char* label, TraceKind* kind) {
  ImGui::SetNextItemWidth(110);
  if (!ImGui::BeginCombo(label, std::string(trace_kind_name(*kind)).c_str())) return;
  for (TraceKind k : kTraceKinds)
    if (ImGui::Selectable(std::string(trace_kind_name(k)).c_str(), k == *kind)) *kind = k;
  ImGui::EndCombo();
}

namespace {

void stage_combo(const char* label, const Session& s, StageRef* ref) {
  const auto* p = s.pipeline(ref->pipeline);
  const auto& list = p->stages.of(ref->kind);
  if (list.empty()) {
    ImGui::TextDisabled("(no %s stages)", std::string(trace_kind_name(ref->kind)).c_str());
    return;
  }
  ref->stage = std::clamp(ref->stage, 0, static_cast<int>(list.size()) - 1);
  std::string preview = std::to_string(ref->stage) + " " + list[ref->stage].pass;
  ImGui::SetNextItemWidth(240);
  if (!ImGui::BeginCombo(label, preview.c_str())) return;
  for (int i = 0; i < static_cast<int>(list.size()); ++i) {
    std::string item = std::to_string(i) + " " + list[i].pass;
    if (ImGui::Selectable(item.c_str(), i == ref->stage)) ref->stage = i;
  }
  ImGui::EndCombo();
}

}  // namespace

const char* diff_mark(DiffKind k) {
  switch (k) {
    case DiffKind::same: return " ";
    case DiffKind::renamed: return "=";
    case DiffKind::changed: return "~";
    case DiffKind::added: return "+";
    case DiffKind::removed: return "-";
  }
  return "?";
}

bool is_change(DiffKind k) { return k == DiffKind::changed || k == DiffKind::added || k == DiffKind::removed; }

std::vector<int> folded_rows(const std::vector<bool>& differs, bool fold) {
  constexpr int kContext = 3;
  const int n = static_cast<int>(differs.size());
  std::vector<bool> keep(n, !fold);
  for (int r = 0; r < n && fold; ++r)
    if (differs[r])
      for (int k = std::max(0, r - kContext); k <= std::min(n - 1, r + kContext); ++k) keep[k] = true;
  std::vector<int> out;
  for (int r = 0; r < n;) {
    if (keep[r]) {
      out.push_back(r++);
      continue;
    }
    int start = r;
    while (r < n && !keep[r]) ++r;
    out.push_back(-(r - start));
  }
  return out;
}

void DiffPanel::next_change(int direction) {
  int n = static_cast<int>(diff_.statements.size());
  for (int step = 1; step <= n; ++step) {
    int r = ((focus_ < 0 ? (direction > 0 ? -1 : 0) : focus_) + direction * step % n + n) % n;
    if (is_change(diff_.statements[r].kind)) {
      focus_ = r;
      scroll_to_focus_ = true;
      return;
    }
  }
}

void DiffPanel::build_display(bool fold) {
  std::vector<bool> differs;
  for (const auto& row : diff_.statements) differs.push_back(is_change(row.kind));
  display_ = folded_rows(differs, fold);
  display_folded_ = fold;
}

void DiffPanel::draw_selectors(Session& s) {
  DiffSelection& d = s.diff;
  ImGui::Checkbox("follow the selected stage", &d.follow_selection);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("selecting a stage in the stage browser diffs it against the stage before it");
  int mode = d.all_pipelines ? 2 : d.across_pipelines ? 1 : 0;
  ImGui::RadioButton("two stages of one pipeline", &mode, 0);
  ImGui::SameLine();
  ImGui::RadioButton("same stage of two pipelines", &mode, 1);
  ImGui::SameLine();
  ImGui::RadioButton("every pipeline", &mode, 2);
  s.targets.mark_last_item("diff/every-pipeline");
  d.across_pipelines = mode == 1;
  d.all_pipelines = mode == 2;
  if (d.all_pipelines) return;
  ImGui::SameLine();
  ImGui::Checkbox("unified", &d.unified);
  if (!d.across_pipelines) {
    pipeline_combo("pipeline", *s.capture, &d.left.pipeline);
    ImGui::SameLine();
    kind_combo("kind", &d.left.kind);
    d.right.pipeline = d.left.pipeline;
    d.right.kind = d.left.kind;
    stage_combo("left stage", s, &d.left);
    ImGui::SameLine();
    stage_combo("right stage", s, &d.right);
  } else {
    pipeline_combo("left", *s.capture, &d.left.pipeline);
    ImGui::SameLine();
    pipeline_combo("right", *s.capture, &d.right.pipeline);
    ImGui::SameLine();
    kind_combo("kind", &d.left.kind);
    d.right.kind = d.left.kind;
    // Same stage: the last stage of each pipeline unless a position is chosen.
    stage_combo("left stage", s, &d.left);
    ImGui::SameLine();
    stage_combo("right stage", s, &d.right);
  }
}

void DiffPanel::draw(Session& s) {
  const Theme& t = theme();
  if (!s.capture || s.capture->pipelines.empty()) {
    ImGui::TextColored(t.muted, "no capture");
    return;
  }
  auto clamp_pipeline = [&](int& p) { p = std::clamp(p, 0, static_cast<int>(s.capture->pipelines.size()) - 1); };
  clamp_pipeline(s.diff.left.pipeline);
  clamp_pipeline(s.diff.right.pipeline);
  draw_selectors(s);
  if (s.diff.all_pipelines) {
    pipelines.draw(s);
    return;
  }
  TracePtr a = s.trace(s.diff.left);
  TracePtr b = s.trace(s.diff.right);
  if (!a || !b) {
    left_ = right_ = nullptr;
    std::string why = s.unreadable(a ? s.diff.right : s.diff.left);
    if (!why.empty())
      ImGui::TextWrapped("%s", why.c_str());
    else
      ImGui::TextColored(t.muted, "choose two stages that exist");
    return;
  }
  ImGui::SameLine();
  bool recompute = ImGui::Checkbox("subsymbols", &subsymbols_);
  ImGui::SameLine();
  ImGui::Checkbox("fold unchanged", &s.diff.fold_unchanged);
  bool rebuild = display_folded_ != s.diff.fold_unchanged;
  if (recompute || a != left_ || b != right_) {
    left_ = a;
    right_ = b;
    PrintOptions options;
    options.depth = subsymbols_ ? PrintOptions::kAllLevels : 0;
    options.headers = false;
    diff_ = diff_traces(*left_, *right_, options);
    focus_ = -1;
    rebuild = true;
  }
  if (rebuild) build_display(s.diff.fold_unchanged);
  ImGui::Separator();
  if (diff_.same_program)
    ImGui::TextColored(t.ok, "same program%s", diff_.same_text ? " (identical text)" : ", different names");
  else
    ImGui::TextColored(t.changed, "different programs");
  ImGui::SameLine();
  ImGui::Text("  = renamed %d   ~ changed %d   + added %d   - removed %d", diff_.count(DiffKind::renamed),
              diff_.count(DiffKind::changed), diff_.count(DiffKind::added), diff_.count(DiffKind::removed));
  ImGui::SameLine();
  if (ImGui::SmallButton("previous change")) next_change(-1);
  if (s.targets.enabled) s.targets.mark_last_item("diff/previous-change");
  ImGui::SameLine();
  if (ImGui::SmallButton("next change")) next_change(+1);
  if (s.targets.enabled) s.targets.mark_last_item("diff/next-change");
  bool typing = ImGui::GetIO().WantTextInput;
  if (!typing && ImGui::IsWindowFocused(ImGuiFocusedFlags_RootAndChildWindows) && ImGui::IsKeyPressed('N'))
    next_change(ImGui::GetIO().KeyShift ? -1 : +1);
  draw_renames();
  if (s.diff.unified) draw_unified();
  else draw_side_by_side();
}

// Which name became which, beside the verdict (folded: a gpt stage renames hundreds).
void DiffPanel::draw_renames() {
  if (diff_.renames.empty()) return;
  std::string title = "rename map: " + std::to_string(diff_.renames.size()) + " name" +
                      (diff_.renames.size() == 1 ? "" : "s") + " differ###renames";
  if (!ImGui::TreeNode(title.c_str())) return;
  std::string text;
  const size_t shown = std::min<size_t>(diff_.renames.size(), 500);
  for (size_t i = 0; i < shown; ++i)
    text += (i ? ",  " : "") + diff_.renames[i].first + " -> " + diff_.renames[i].second;
  if (shown < diff_.renames.size()) text += ",  ... (" + std::to_string(diff_.renames.size() - shown) + " more)";
  ImGui::TextWrapped("%s", text.c_str());
  ImGui::TreePop();
}

void DiffPanel::draw_side_by_side() {
  const auto flags = ImGuiTableFlags_Borders | ImGuiTableFlags_ScrollY | ImGuiTableFlags_Resizable;
  if (!ImGui::BeginTable("diff", 4, flags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("#", ImGuiTableColumnFlags_WidthFixed, 40);
  ImGui::TableSetupColumn("left", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("", ImGuiTableColumnFlags_WidthFixed, 16);
  ImGui::TableSetupColumn("right", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableHeadersRow();
  if (scroll_to_focus_ && focus_ >= 0) {
    // A folded focus row is unfolded around it: every change keeps its context, so it is shown.
    int at = 0;
    for (int i = 0; i < static_cast<int>(display_.size()); ++i)
      if (display_[i] == focus_) at = i;
    float row_height = ImGui::GetTextLineHeight() + 2 * ImGui::GetStyle().CellPadding.y + 1;
    ImGui::SetScrollY(std::max(0.0f, (at - 3) * row_height));
    scroll_to_focus_ = false;
  }
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(display_.size()));
  while (clipper.Step()) {
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      int r = display_[i];
      ImGui::TableNextRow();
      if (r < 0) {
        ImGui::TableNextColumn();
        ImGui::TableNextColumn();
        ImGui::TextDisabled("... %d unchanged statement%s", -r, r == -1 ? "" : "s");
        ImGui::TableNextColumn();
        ImGui::TableNextColumn();
        continue;
      }
      const DiffRow& row = diff_.statements[r];
      if (ImU32 bg = kind_background(row.kind)) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, bg);
      if (r == focus_) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, theme().changed_bg);
      ImGui::TableNextColumn();
      ImGui::TextDisabled("%d", r + 1);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(row.left_text.c_str());
      ImGui::TableNextColumn();
      ImGui::TextColored(kind_colour(row.kind), "%s", diff_mark(row.kind));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(row.right_text.c_str());
    }
  }
  ImGui::EndTable();
}

void DiffPanel::draw_unified() const {
  ImGui::BeginChild("unified", ImVec2(0, 0), true, ImGuiWindowFlags_HorizontalScrollbar);
  // One line per removed/added side; a changed or renamed row shows both sides.
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(diff_.statements.size()));
  while (clipper.Step()) {
    for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) {
      const DiffRow& row = diff_.statements[r];
      const std::string& text = row.kind == DiffKind::removed ? row.left_text : row.right_text;
      ImGui::TextColored(kind_colour(row.kind), "%s %s", diff_mark(row.kind), text.c_str());
      if (row.kind == DiffKind::changed && ImGui::IsItemHovered())
        ImGui::SetTooltip("was: %s", row.left_text.c_str());
    }
  }
  ImGui::EndChild();
}

}  // namespace tv::gui
