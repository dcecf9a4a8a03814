#include "gui/theme.h"

#include <string>

namespace tv::gui {

const Theme& theme() {
  static const Theme t = [] {
    Theme x;
    x.token[static_cast<int>(Token::plain)] = IM_COL32(215, 218, 224, 255);
    x.token[static_cast<int>(Token::keyword)] = IM_COL32(198, 120, 221, 255);
    x.token[static_cast<int>(Token::symbol)] = IM_COL32(97, 175, 239, 255);
    x.token[static_cast<int>(Token::proxy)] = IM_COL32(229, 192, 123, 255);
    x.token[static_cast<int>(Token::string)] = IM_COL32(152, 195, 121, 255);
    x.token[static_cast<int>(Token::number)] = IM_COL32(209, 154, 102, 255);
    x.token[static_cast<int>(Token::type)] = IM_COL32(86, 182, 194, 255);
    x.token[static_cast<int>(Token::comment)] = IM_COL32(118, 128, 140, 255);
    x.token[static_cast<int>(Token::punct)] = IM_COL32(171, 178, 191, 255);
    return x;
  }();
  return t;
}

void apply_theme() {
  ImGui::StyleColorsDark();
  ImGuiStyle& s = ImGui::GetStyle();
  s.WindowRounding = 0;
  s.ChildRounding = 0;
  s.FrameRounding = 2;
  s.TabRounding = 2;
  s.ItemSpacing = ImVec2(8, 4);
  s.Colors[ImGuiCol_WindowBg] = theme().background;
}

ImVec4 verdict_colour(const std::string& verdict) {
  const Theme& t = theme();
  auto word = verdict.substr(0, verdict.find(':'));  // "refused: one-parameter-distribution"
  if (word == "equivalent" || word == "passed") return t.ok;
  if (word == "different" || word == "changed") return t.changed;
  if (word == "failed") return t.error;
  if (word == "refused") return t.refused;
  return t.muted;
}

}  // namespace tv::gui
