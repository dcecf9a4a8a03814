#include "gui/order_panel.h"

#include <imgui.h>

#include <algorithm>
#include <optional>
#include <string>

#include "gui/theme.h"
#include "session/assess.h"
#include "transforms/semantics.h"
#include "transforms/transform.h"

namespace tv::gui {

std::optional<RunRequest> rerun_request(const Session& s) { return s.rerun().request; }

void OrderPanel::initialise(const Session& s) {
  if (initialised || !s.capture) return;
  initialised = true;
  if (s.capture->pipelines.empty()) return;
  const PipelineSpec& first = s.capture->pipelines.front().spec;
  bool known = !first.order.empty() && std::all_of(first.order.begin(), first.order.end(), is_known_transform);
  if (known) {
    order = first.order;
    world_size = first.world_size;
    device = first.device;
    semantics = first.semantics;
    workaround = first.workaround;
    previous = first;
  }
}

void OrderPanel::move(int from, int to) {
  int n = static_cast<int>(order.size());
  if (from < 0 || from >= n || to < 0 || to >= n || from == to) return;
  std::string item = order[from];
  order.erase(order.begin() + from);
  order.insert(order.begin() + to, item);
}

void OrderPanel::add(const std::string& transform) {
  if (is_known_transform(transform)) order.push_back(transform);
}

void OrderPanel::remove(int index) {
  if (index >= 0 && index < static_cast<int>(order.size())) order.erase(order.begin() + index);
}

void OrderPanel::set_order(const std::vector<std::string>& transforms) {
  order.clear();
  for (const auto& t : transforms) add(t);
}

PipelineSpec OrderPanel::spec() const {
  PipelineSpec p;
  p.order = order;
  p.world_size = world_size;
  p.device = device;
  p.semantics = semantics;
  p.workaround = workaround;
  return p;
}

bool OrderPanel::run(Session& s) {
  auto request = rerun_request(s);
  if (!request) {
    s.error = "this capture cannot be re-run: " + s.rerun().why_not;
    return false;
  }
  if (s.worker.busy()) {
    s.error = "the engine is still busy; wait for it to finish";
    return false;
  }
  request->pipelines.clear();
  if (previous) request->pipelines.push_back(*previous);
  request->pipelines.push_back(spec());
  std::string what = "running " + (previous ? previous->label() + " and " : std::string()) + spec().label();
  previous = spec();
  s.run(*request, what);
  return true;
}

void OrderPanel::draw_list(UiTargets& targets) {
  const Theme& t = theme();
  ImGui::TextWrapped("Transforms, applied left to right: the first wraps the model.");
  ImGui::TextColored(t.muted, "drag an item onto another to reorder");
  int move_from = -1, move_to = -1, remove_at = -1;
  for (int i = 0; i < static_cast<int>(order.size()); ++i) {
    ImGui::PushID(i);
    std::string label = std::to_string(i + 1) + ". " + order[i];
    ImGui::Selectable(label.c_str(), false, 0, ImVec2(160, 0));
    targets.mark_last_item("order/item/" + std::to_string(i));
    if (ImGui::BeginDragDropSource()) {
      ImGui::SetDragDropPayload("TV_TRANSFORM", &i, sizeof i);
      ImGui::Text("move %s", order[i].c_str());
      ImGui::EndDragDropSource();
    }
    if (ImGui::BeginDragDropTarget()) {
      if (const ImGuiPayload* payload = ImGui::AcceptDragDropPayload("TV_TRANSFORM")) {
        move_from = *static_cast<const int*>(payload->Data);
        move_to = i;
      }
      ImGui::EndDragDropTarget();
    }
    ImGui::SameLine();
    if (ImGui::ArrowButton("up", ImGuiDir_Up)) move_from = i, move_to = i - 1;
    ImGui::SameLine();
    if (ImGui::ArrowButton("down", ImGuiDir_Down)) move_from = i, move_to = i + 1;
    ImGui::SameLine();
    if (ImGui::SmallButton("remove")) remove_at = i;
    ImGui::PopID();
  }
  if (move_from >= 0) move(move_from, move_to);
  if (remove_at >= 0) remove(remove_at);
  ImGui::TextUnformatted("add:");
  for (const auto& name : transform_names()) {
    ImGui::SameLine();
    if (ImGui::SmallButton(name.c_str())) add(name);
  }
  // What the order means, in Thunder's words: the last transform is the outermost call.
  std::string call = "m";
  for (const auto& tr : order) call = tr + "(" + call + ")";
  ImGui::TextColored(t.muted, "as calls: %s", call.c_str());
}

void OrderPanel::draw(Session& s) {
  const Theme& t = theme();
  initialise(s);
  ImGui::BeginChild("order-editor", ImVec2(430, 0), true);
  draw_list(s.targets);
  ImGui::Separator();
  ImGui::SetNextItemWidth(120);
  ImGui::InputInt("world size", &world_size);
  world_size = std::clamp(world_size, 1, 64);
  int dev = device == "cuda" ? 1 : 0;
  ImGui::RadioButton("cpu", &dev, 0);
  ImGui::SameLine();
  ImGui::RadioButton("cuda", &dev, 1);
  device = dev ? "cuda" : "cpu";
  draw_semantics();
  ImGui::Separator();
  bool can_run = rerun_request(s).has_value() && !s.worker.busy() && !order.empty();
  if (!can_run) ImGui::BeginDisabled();
  if (ImGui::Button("Run", ImVec2(120, 0))) run(s);
  if (!can_run) ImGui::EndDisabled();
  ImGui::SameLine();
  if (s.worker.busy()) ImGui::TextColored(t.muted, "running...");
  else if (!rerun_request(s)) ImGui::TextColored(t.muted, "cannot run");
  else ImGui::TextColored(t.muted, "compares %s with %s", previous ? previous->label().c_str() : "(none)",
                          spec().label().c_str());
  if (const Rerun& r = s.rerun(); !r.why_not.empty() || !r.note.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, r.why_not.empty() ? t.muted : t.error);
    ImGui::TextWrapped("%s", r.why_not.empty() ? r.note.c_str() : r.why_not.c_str());
    ImGui::PopStyleColor();
    if (s.targets.enabled) s.targets.mark_last_item("order/rerun-note");
  }
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("order-results", ImVec2(0, 0), true);
  draw_results(s);
  ImGui::EndChild();
}

void OrderPanel::draw_semantics() {
  ImGui::SetNextItemWidth(160);
  if (ImGui::BeginCombo("semantics", semantics.c_str())) {
    for (const auto& m : semantics_modes()) {
      if (ImGui::Selectable(std::string(m.name).c_str(), semantics == m.name)) semantics = m.name;
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", std::string(m.description).c_str());
    }
    ImGui::EndCombo();
  }
  // The workaround copies the module's group into the jit() snapshot: only where a reader uses it.
  bool snapshot_read = find_semantics(semantics).has_snapshot_reader();
  if (!snapshot_read) workaround.clear();
  bool on = !workaround.empty();
  if (!snapshot_read) ImGui::BeginDisabled();
  if (ImGui::Checkbox("workaround: process-group", &on)) workaround = on ? std::string(kWorkaroundProcessGroup) : "";
  if (!snapshot_read) ImGui::EndDisabled();
  if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
    ImGui::SetTooltip("tmodel._lc_cd.process_group_for_ddp = tmodel._lc_cd.fn.process_group_for_ddp");
}

// The failed stage of pipeline `p` (a pass that stopped), or null.
std::optional<StageRef> failed_stage(const Capture& c, int p) {
  for (auto kind : kTraceKinds) {
    const auto& list = c.pipelines[p].stages.of(kind);
    for (int i = 0; i < static_cast<int>(list.size()); ++i)
      if (list[i].failed()) return StageRef{p, kind, i};
  }
  return std::nullopt;
}

void OrderPanel::draw_results(Session& s) {
  const Theme& t = theme();
  if (!s.capture) {
    ImGui::TextColored(t.muted, "no capture yet");
    return;
  }
  const Capture& c = *s.capture;
  ImGui::Text("Pipelines of the capture (%zu)", c.pipelines.size());
  if (ImGui::BeginTable("pipelines", 4, ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg)) {
    ImGui::TableSetupColumn("pipeline", ImGuiTableColumnFlags_WidthFixed, 220);
    ImGui::TableSetupColumn("verdict", ImGuiTableColumnFlags_WidthFixed, 110);
    ImGui::TableSetupColumn("world / device", ImGuiTableColumnFlags_WidthFixed, 110);
    ImGui::TableSetupColumn("error and rule");
    ImGui::TableHeadersRow();
    for (int p = 0; p < static_cast<int>(c.pipelines.size()); ++p) {
      const auto& rec = c.pipelines[p];
      std::string verdict = pipeline_outcome(c, p);
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      std::string label = "P" + std::to_string(p) + " " + rec.spec.label();
      if (ImGui::Selectable(label.c_str(), s.selected.pipeline == p)) s.select_stage(first_stage(c, p));
      ImGui::TableNextColumn();
      ImGui::TextColored(verdict_colour(verdict), "%s", verdict.c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%d / %s", rec.spec.world_size, rec.spec.device.c_str());
      ImGui::TableNextColumn();
      for (const auto& reason : rec.outcome.reasons) {
        std::string why = (rec.outcome.rule.empty() ? "" : "rule " + rec.outcome.rule + ": ") + reason;
        ImGui::TextWrapped("%s", why.c_str());
      }
      if (auto failed = failed_stage(c, p)) {
        std::string button = "show the failing line##P" + std::to_string(p);
        if (ImGui::SmallButton(button.c_str())) {
          s.select_stage(*failed);
          s.select_panel(Panel::trace);
        }
        s.targets.mark_last_item("order/failed-stage/P" + std::to_string(p));
      }
    }
    ImGui::EndTable();
  }
  for (const auto& cmp : c.comparisons) {
    ImGui::Separator();
    const std::string verdict(verdict_name(cmp.verdict));
    ImGui::PushStyleColor(ImGuiCol_Text, verdict_colour(verdict));
    ImGui::TextWrapped("%s", comparison_line(c, cmp).c_str());
    ImGui::PopStyleColor();
    const bool replayed = c.pipelines.at(cmp.left).replay && c.pipelines.at(cmp.right).replay;
    ImGui::Text("traces %s, numbers %s", cmp.traces_equal ? "canonically equal" : "differ",
                !replayed ? "not compared (not replayed)" : cmp.numbers_equal ? "equal" : "differ");
    int equal = static_cast<int>(std::count_if(cmp.stages.begin(), cmp.stages.end(),
                                               [](const StageComparison& sc) { return sc.equal; }));
    ImGui::Text("%d of %zu aligned stages equal", equal, cmp.stages.size());
    ImGui::PushID(cmp.right);
    if (ImGui::SmallButton("open both in the diff view")) {
      s.diff.across_pipelines = true;
      s.diff.left = {cmp.left, TraceKind::forward, 0};
      s.diff.right = {cmp.right, TraceKind::forward, 0};
      if (const auto* l = s.pipeline(cmp.left)) s.diff.left.stage = std::max(0, static_cast<int>(l->stages.forward.size()) - 1);
      if (const auto* r = s.pipeline(cmp.right)) s.diff.right.stage = std::max(0, static_cast<int>(r->stages.forward.size()) - 1);
      s.select_panel(Panel::diff);
    }
    ImGui::PopID();
  }
  if (c.comparisons.empty() && c.pipelines.size() > 1)
    ImGui::TextColored(t.muted, "the capture holds no comparison of these pipelines (verdict: not compared)");
}

}  // namespace tv::gui
