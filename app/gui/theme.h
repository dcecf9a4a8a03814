// Colours of the window: one palette, looked up by meaning (a changed stage, a removed line, a
// keyword), so every panel agrees. Colour is never the only signal: panels also print a text mark.
#pragma once
#include <imgui.h>

#include "gui/trace_text.h"

namespace tv::gui {

struct Theme {
  ImVec4 background{0.11f, 0.12f, 0.14f, 1.0f};
  ImU32 token[9];             // per Token
  ImU32 line_number = IM_COL32(110, 118, 130, 255);
  ImU32 use_highlight = IM_COL32(70, 90, 140, 110);
  ImU32 definition_highlight = IM_COL32(200, 150, 40, 120);
  ImU32 search_highlight = IM_COL32(160, 120, 40, 150);
  ImU32 current_line = IM_COL32(255, 255, 255, 20);
  ImU32 gradient_link = IM_COL32(60, 150, 170, 90);     // a followed forward statement and its backward ones
  ImU32 saved_value = IM_COL32(170, 90, 190, 120);      // the saved-for-backward values they read
  ImU32 source_link = IM_COL32(120, 160, 60, 80);       // statements from the followed source line
  ImVec4 ok{0.45f, 0.80f, 0.45f, 1.0f};
  ImVec4 changed{0.95f, 0.75f, 0.30f, 1.0f};
  ImVec4 muted{0.55f, 0.58f, 0.62f, 1.0f};
  ImVec4 error{0.95f, 0.40f, 0.35f, 1.0f};
  ImVec4 refused{0.85f, 0.45f, 0.85f, 1.0f};  // an order a composition rule refused
  ImVec4 added{0.40f, 0.80f, 0.45f, 1.0f};
  ImVec4 removed{0.95f, 0.45f, 0.40f, 1.0f};
  ImVec4 renamed{0.55f, 0.70f, 0.95f, 1.0f};
  ImU32 added_bg = IM_COL32(40, 110, 50, 70);
  ImU32 removed_bg = IM_COL32(140, 40, 40, 70);
  ImU32 changed_bg = IM_COL32(140, 110, 30, 70);
  ImU32 bar = IM_COL32(90, 140, 220, 255);
};

const Theme& theme();
void apply_theme();  // ImGui style: dark, square, compact
ImVec4 verdict_colour(const std::string& verdict);

}  // namespace tv::gui
