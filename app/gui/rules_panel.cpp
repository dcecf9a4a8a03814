#include "gui/rules_panel.h"

#include <imgui.h>

#include <algorithm>
#include <optional>

#include "gui/order_panel.h"
#include "gui/theme.h"
#include "transforms/semantics.h"

namespace tv::gui {
namespace {

std::vector<std::string> compared_with(const RuleCell& cell) {
  if (!cell.versus.empty()) return cell.versus;
  return {cell.order.rbegin(), cell.order.rend()};
}

std::string cell_name(const RuleCell& cell) { return PipelineSpec{cell.order, cell.semantics}.label(); }

ImVec4 scaled(const ImVec4& c, float f) { return ImVec4(c.x * f, c.y * f, c.z * f, 1); }

// Listed under the (lazy) matrix: the longer orders, and the cells another semantics mode changes.
bool is_listed(const RulesMatrix& m, const RuleCell& cell) {
  if (cell.semantics == kLazy) return cell.order.size() > 2;
  const RuleCell* lazy = m.find(cell.order, std::string(kLazy));
  return !lazy || lazy->label() != cell.label();
}

// A cell fits its widest verdict and its column's transform name.
float cell_width(const RulesMatrix& m) {
  float w = ImGui::CalcTextSize("equivalent").x;
  for (const auto& t : m.transforms) w = std::max(w, ImGui::CalcTextSize(t.c_str()).x);
  return w + ImGui::GetStyle().FramePadding.x * 2 + 6;
}

// The table: the row-name column and one column per transform, with cell padding and borders.
float matrix_width(const RulesMatrix& m) {
  const ImGuiStyle& style = ImGui::GetStyle();
  float header = ImGui::CalcTextSize("first \\ then").x;
  for (const auto& t : m.transforms) header = std::max(header, ImGui::CalcTextSize(t.c_str()).x);
  const float columns = static_cast<float>(m.transforms.size()) + 1;
  return header + (columns - 1) * cell_width(m) + columns * (style.CellPadding.x * 2 + 1) + 1;
}

}  // namespace

int find_pipeline(const Capture& c, const std::vector<std::string>& order, const std::string& semantics) {
  for (int p = 0; p < static_cast<int>(c.pipelines.size()); ++p)
    if (c.pipelines[p].spec.order == order && c.pipelines[p].spec.semantics == semantics) return p;
  return -1;
}

void open_pipelines_in_diff(Session& s, int left, int right) {
  const auto* a = s.pipeline(left);
  const auto* b = s.pipeline(right);
  if (!a || !b) return;
  const bool backward = !a->stages.backward.empty() && !b->stages.backward.empty();
  TraceKind kind = backward ? TraceKind::backward : TraceKind::forward;
  s.diff.across_pipelines = true;
  s.diff.left = {left, kind, std::max(0, static_cast<int>(a->stages.of(kind).size()) - 1)};
  s.diff.right = {right, kind, std::max(0, static_cast<int>(b->stages.of(kind).size()) - 1)};
  s.select_panel(Panel::diff);
}

bool RulesPanel::is_selected(const RuleCell& cell) const {
  return cell.order == selected && cell.semantics == selected_semantics;
}

void RulesPanel::open_cell(Session& s, const RuleCell& cell) {
  selected = cell.order;
  selected_semantics = cell.semantics;
  if (!s.capture) return;
  const std::vector<std::string> versus = compared_with(cell);
  int a = find_pipeline(*s.capture, cell.order, cell.semantics), b = find_pipeline(*s.capture, versus, cell.semantics);
  if (a >= 0 && b >= 0) {
    open_pipelines_in_diff(s, a, b);
    return;
  }
  auto request = rerun_request(s);
  if (!request) {
    s.error = "the capture holds no pipelines for this cell and cannot run them: " + s.rerun().why_not;
    return;
  }
  if (s.worker.busy()) {
    s.error = "the engine is still busy; click the cell again when it has finished";
    return;
  }
  request->pipelines.clear();
  int world = s.capture->rules ? std::max(1, s.capture->rules->world_size) : 1;
  for (const auto& order : {cell.order, versus}) {
    PipelineSpec spec;
    spec.order = order;
    spec.semantics = cell.semantics;
    spec.world_size = world;
    request->pipelines.push_back(spec);
  }
  s.carry_rules = s.capture->rules;  // keep the matrix on screen after the run
  pending_open = true;
  s.run(*request, "running " + cell_name(cell) + " and " + PipelineSpec{versus, cell.semantics}.label());
}

void RulesPanel::open_order(Session& s, const std::vector<std::string>& order, const std::string& semantics) {
  if (s.capture && s.capture->rules)
    if (const RuleCell* cell = s.capture->rules->find(order, semantics)) {
      RuleCell copy = *cell;  // open_cell may start a run that replaces the capture holding `cell`
      open_cell(s, copy);
      return;
    }
  RuleCell cell;
  cell.order = order;
  cell.semantics = semantics;
  open_cell(s, cell);
}

void RulesPanel::on_new_capture(Session& s) {
  if (!pending_open || s.worker.busy() || !s.capture) return;
  pending_open = false;
  if (s.capture->pipelines.size() >= 2) open_pipelines_in_diff(s, 0, 1);
}

void RulesPanel::draw(Session& s) {
  const Theme& t = theme();
  drawn.clear();
  shown_rule.clear();
  if (!s.capture) {
    ImGui::TextColored(t.muted, "no capture");
    return;
  }
  if (!s.capture->rules) {
    ImGui::TextColored(t.muted, "This capture holds no rules matrix.");
    ImGui::TextWrapped("Make one with the batch command `thunder-viz rules --model linear --out rules.tvz.json` "
                       "and open it here. The composition rules are computed by running every ordered pair of "
                       "transforms, never written by hand.");
    return;
  }
  const RulesMatrix& m = *s.capture->rules;
  ImGui::Text("Composition rules for model %s, world size %d", m.model.c_str(), m.world_size);
  ImGui::TextColored(t.muted, "row = applied first, column = applied second; click a cell to diff both orders");
  // The matrix gets the width its columns need and the explanation sits beside it; when the window
  // is too narrow for both, the explanation goes below.
  const ImGuiStyle& style = ImGui::GetStyle();
  const float matrix_w = matrix_width(m) + style.WindowPadding.x * 2 + style.ScrollbarSize;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const bool beside = avail.x >= matrix_w + 280;
  int listed = static_cast<int>(std::count_if(m.cells.begin(), m.cells.end(), [&](const RuleCell& c) { return is_listed(m, c); }));
  const float row_h = ImGui::GetFrameHeight() + style.CellPadding.y * 2 + 1;
  const float matrix_h = (static_cast<float>(m.transforms.size()) + 1) * row_h +
                         static_cast<float>(listed + 2) * ImGui::GetTextLineHeightWithSpacing() +
                         style.WindowPadding.y * 2 + style.ScrollbarSize;
  ImGui::BeginChild("matrix", beside ? ImVec2(matrix_w, 0) : ImVec2(0, std::min(matrix_h, avail.y * 0.6f)), true,
                    ImGuiWindowFlags_HorizontalScrollbar);
  draw_matrix(s, m);
  ImGui::EndChild();
  if (beside) ImGui::SameLine();
  ImGui::BeginChild("rule-detail", ImVec2(0, 0), true);
  draw_detail(s, m);
  ImGui::EndChild();
}

void RulesPanel::draw_matrix(Session& s, const RulesMatrix& m) {
  const float cell_w = cell_width(m);
  // A click may start a run that replaces the capture (and this matrix): act after drawing.
  std::optional<RuleCell> clicked;
  auto record = [&](const RuleCell& cell, const std::string& label, const ImVec4& colour) {
    drawn.push_back({cell.order, cell.semantics, std::string(cell.word()), label,
                     {colour.x, colour.y, colour.z, colour.w}, is_selected(cell)});
  };
  int n = static_cast<int>(m.transforms.size());
  if (ImGui::BeginTable("rules", n + 1, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit,
                        ImVec2(matrix_width(m), 0))) {
    ImGui::TableSetupColumn("first \\ then");
    for (const auto& tr : m.transforms) ImGui::TableSetupColumn(tr.c_str());
    ImGui::TableHeadersRow();
    for (int r = 0; r < n; ++r) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::AlignTextToFramePadding();
      ImGui::TextUnformatted(m.transforms[r].c_str());
      for (int c = 0; c < n; ++c) {
        ImGui::TableNextColumn();
        const RuleCell* cell = m.find({m.transforms[r], m.transforms[c]});
        if (!cell) {
          ImGui::AlignTextToFramePadding();
          ImGui::TextDisabled("?");  // not computed
          continue;
        }
        const std::string verdict(cell->word());
        const ImVec4 colour = verdict_colour(verdict);
        const bool is_sel = is_selected(*cell);
        ImGui::PushStyleColor(ImGuiCol_Button, scaled(colour, 0.45f));
        ImGui::PushStyleColor(ImGuiCol_ButtonHovered, scaled(colour, 0.6f));
        ImGui::PushStyleColor(ImGuiCol_ButtonActive, scaled(colour, 0.75f));
        ImGui::PushStyleColor(ImGuiCol_Border, is_sel ? ImVec4(1, 1, 1, 1) : ImGui::GetStyle().Colors[ImGuiCol_Border]);
        ImGui::PushStyleVar(ImGuiStyleVar_FrameBorderSize, is_sel ? 2.0f : 0.0f);
        ImGui::PushID(r * 1000 + c);
        if (ImGui::Button(verdict.c_str(), ImVec2(cell_w, 0))) clicked = *cell;
        s.targets.mark_last_item("rules/cell/" + cell_name(*cell));
        if (ImGui::IsItemHovered())
          ImGui::SetTooltip("%s then %s: %s%s%s\n%s\n(click: diff both orders)", cell->order[0].c_str(),
                            cell->order[1].c_str(), verdict.c_str(), cell->rule.empty() ? "" : ", rule ",
                            cell->rule.c_str(), cell->detail.c_str());
        ImGui::PopID();
        ImGui::PopStyleVar();
        ImGui::PopStyleColor(4);
        record(*cell, verdict, colour);
      }
    }
    ImGui::EndTable();
  }
  bool listed = false;
  for (const auto& cell : m.cells) {
    if (!is_listed(m, cell)) continue;
    if (!listed) {
      ImGui::Spacing();
      ImGui::Text("Longer orders, and the cells Thunder's semantics modes change");
    }
    listed = true;
    const std::string verdict(cell.word());
    const std::string label =
        cell_name(cell) + " vs " + PipelineSpec{compared_with(cell), cell.semantics}.label() + ": " + verdict;
    const ImVec4 colour = verdict_colour(verdict);
    ImGui::PushStyleColor(ImGuiCol_Text, colour);
    if (ImGui::Selectable(label.c_str(), is_selected(cell))) clicked = cell;
    ImGui::PopStyleColor();
    s.targets.mark_last_item("rules/cell/" + cell_name(cell));
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s\n(click: diff both orders)", cell.detail.c_str());
    record(cell, label, colour);
  }
  if (clicked) open_cell(s, *clicked);
}

void RulesPanel::draw_detail(const Session& s, const RulesMatrix& m) {
  const Theme& t = theme();
  const RuleCell* cell = selected.empty() ? nullptr : m.find(selected, selected_semantics);
  if (!cell) {
    ImGui::TextColored(t.muted, "select a cell");
  } else {
    std::string verdict = cell->label();
    ImGui::Text("%s vs %s", cell_name(*cell).c_str(), PipelineSpec{compared_with(*cell), cell->semantics}.label().c_str());
    ImGui::TextColored(verdict_colour(verdict), "%s", verdict.c_str());
    if (pending_open && s.worker.busy()) {
      ImGui::SameLine();
      ImGui::TextColored(t.muted, "(running both orders for the diff view...)");
    }
    if (!cell->rule.empty()) ImGui::Text("rule: %s", cell->rule.c_str());
    ImGui::TextWrapped("%s", cell->detail.c_str());
    auto it = m.explanations.find(cell->rule);
    if (it != m.explanations.end()) {
      ImGui::Separator();
      ImGui::TextWrapped("%s", it->second.c_str());
      shown_rule = cell->rule;
    }
  }
  ImGui::Separator();
  ImGui::Text("Rules");
  for (const auto& [rule, text] : m.explanations) {
    ImGui::Bullet();
    ImGui::TextWrapped("%s: %s", rule.c_str(), text.c_str());
  }
}

}  // namespace tv::gui
