#include "gui/rules_panel.h"

#include <imgui.h>

#include <algorithm>

#include "gui/order_panel.h"
#include "gui/theme.h"

namespace tv::gui {

int find_pipeline(const Capture& c, const std::vector<std::string>& order) {
  for (int p = 0; p < static_cast<int>(c.pipelines.size()); ++p)
    if (c.pipelines[p].spec.order == order) return p;
  return -1;
}

void open_pipelines_in_diff(Session& s, int left, int right) {
  const auto* a = s.pipeline(left);
  const auto* b = s.pipeline(right);
  if (!a || !b) return;
  TraceKind kind = !a->stages.backward.empty() && !b->stages.backward.empty() ? TraceKind::backward : TraceKind::forward;
  s.diff.across_pipelines = true;
  s.diff.left = {left, kind, std::max(0, static_cast<int>(a->stages.of(kind).size()) - 1)};
  s.diff.right = {right, kind, std::max(0, static_cast<int>(b->stages.of(kind).size()) - 1)};
  s.select_panel(Panel::diff);
}

void RulesPanel::open_cell(Session& s, const std::vector<std::string>& order) {
  selected = order;
  if (!s.capture) return;
  std::vector<std::string> reverse(order.rbegin(), order.rend());
  int a = find_pipeline(*s.capture, order), b = find_pipeline(*s.capture, reverse);
  if (a >= 0 && b >= 0) {
    open_pipelines_in_diff(s, a, b);
    return;
  }
  auto request = rerun_request(s);
  if (!request) {
    s.error = "the capture holds no pipelines for this cell and cannot run them (imported capture)";
    return;
  }
  request->pipelines.clear();
  int world = s.capture->rules ? std::max(1, s.capture->rules->world_size) : 1;
  for (const auto& o : {order, reverse}) {
    PipelineSpec spec;
    spec.order = o;
    spec.world_size = world;
    request->pipelines.push_back(spec);
  }
  s.carry_rules = s.capture->rules;  // keep the matrix on screen after the run
  pending_open = true;
  s.run(*request, "running both orders of " + PipelineSpec{order}.label());
}

void RulesPanel::on_new_capture(Session& s) {
  if (!pending_open || s.worker.busy() || !s.capture) return;
  pending_open = false;
  if (s.capture->pipelines.size() >= 2) open_pipelines_in_diff(s, 0, 1);
}

void RulesPanel::draw(Session& s) {
  const Theme& t = theme();
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
  ImGui::BeginChild("matrix", ImVec2(ImGui::GetContentRegionAvail().x * 0.6f, 0), true, ImGuiWindowFlags_HorizontalScrollbar);
  draw_matrix(s, m);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("rule-detail", ImVec2(0, 0), true);
  draw_detail(m);
  ImGui::EndChild();
}

void RulesPanel::draw_matrix(Session& s, const RulesMatrix& m) {
  const Theme& t = theme();
  int n = static_cast<int>(m.transforms.size());
  if (ImGui::BeginTable("rules", n + 1, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("first \\ then");
    for (const auto& tr : m.transforms) ImGui::TableSetupColumn(tr.c_str());
    ImGui::TableHeadersRow();
    for (int r = 0; r < n; ++r) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(m.transforms[r].c_str());
      for (int c = 0; c < n; ++c) {
        ImGui::TableNextColumn();
        std::vector<std::string> order{m.transforms[r], m.transforms[c]};
        const RuleCell* cell = m.find(order);
        if (!cell) {
          ImGui::TextDisabled(r == c ? "-" : "?");
          continue;
        }
        std::string verdict(composition_name(cell->verdict));
        ImVec4 colour = verdict_colour(verdict);
        ImGui::PushStyleColor(ImGuiCol_Button, ImVec4(colour.x * 0.45f, colour.y * 0.45f, colour.z * 0.45f, 1));
        ImGui::PushStyleColor(ImGuiCol_ButtonHovered, ImVec4(colour.x * 0.6f, colour.y * 0.6f, colour.z * 0.6f, 1));
        ImGui::PushID(r * 1000 + c);
        std::string label = verdict + (selected == order ? " *" : "");
        if (ImGui::Button(label.c_str(), ImVec2(110, 0))) open_cell(s, order);
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s then %s: %s\n%s", order[0].c_str(), order[1].c_str(),
                                                      verdict.c_str(), cell->detail.c_str());
        ImGui::PopID();
        ImGui::PopStyleColor(2);
      }
    }
    ImGui::EndTable();
  }
  bool longer = false;
  for (const auto& cell : m.cells) {
    if (cell.order.size() <= 2) continue;
    if (!longer) ImGui::Text("Longer orders");
    longer = true;
    std::string verdict(composition_name(cell.verdict));
    std::string label = PipelineSpec{cell.order}.label() + ": " + verdict;
    ImGui::PushStyleColor(ImGuiCol_Text, verdict_colour(verdict));
    if (ImGui::Selectable(label.c_str(), selected == cell.order)) open_cell(s, cell.order);
    ImGui::PopStyleColor();
  }
  (void)t;
}

void RulesPanel::draw_detail(const RulesMatrix& m) const {
  const Theme& t = theme();
  const RuleCell* cell = selected.empty() ? nullptr : m.find(selected);
  if (!cell) {
    ImGui::TextColored(t.muted, "select a cell");
  } else {
    std::string verdict(composition_name(cell->verdict));
    ImGui::Text("order %s", PipelineSpec{cell->order}.label().c_str());
    ImGui::TextColored(verdict_colour(verdict), "%s", verdict.c_str());
    if (!cell->rule.empty()) ImGui::Text("rule: %s", cell->rule.c_str());
    ImGui::TextWrapped("%s", cell->detail.c_str());
    auto it = m.explanations.find(cell->rule);
    if (it != m.explanations.end()) {
      ImGui::Separator();
      ImGui::TextWrapped("%s", it->second.c_str());
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
