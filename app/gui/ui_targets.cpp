#include "gui/ui_targets.h"

#include <imgui.h>

#include <algorithm>

namespace tv::gui {

void UiTargets::mark(const std::string& name, const TargetRect& rect) {
  if (!enabled) return;
  // Only the part inside the current window's clip rect can be hovered; nothing when none is.
  const ImDrawList* draw = ImGui::GetWindowDrawList();
  ImVec2 clip_min = draw->GetClipRectMin(), clip_max = draw->GetClipRectMax();
  TargetRect r{std::max(rect.x0, clip_min.x), std::max(rect.y0, clip_min.y), std::min(rect.x1, clip_max.x),
               std::min(rect.y1, clip_max.y)};
  if (r.x0 < r.x1 && r.y0 < r.y1) rects_.emplace(name, r);
}

void UiTargets::mark_last_item(const std::string& name) {
  if (!enabled) return;
  ImVec2 min = ImGui::GetItemRectMin(), max = ImGui::GetItemRectMax();
  mark(name, TargetRect{min.x, min.y, max.x, max.y});
}

std::optional<TargetRect> UiTargets::find(const std::string& name) const {
  auto it = rects_.find(name);
  if (it == rects_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> UiTargets::names() const {
  std::vector<std::string> out;
  for (const auto& [name, rect] : rects_) out.push_back(name);
  return out;
}

}  // namespace tv::gui
