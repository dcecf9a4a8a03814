// Stage browser: per pipeline, the trace kinds and their stages (pass name, time, "changed" or
// "same"), with a filter box and a hide-unchanged toggle; Up/Down step through the visible stages
// of the selected pipeline. While a source line is followed, each stage shows how many of its
// statements came from it. Always shown at the left of the window.
#pragma once
#include <imgui.h>

#include <vector>

#include "gui/session.h"

namespace tv::gui {

struct StageBrowser {
  ImGuiTextFilter filter;
  bool hide_unchanged = false;
  bool scroll_pending = false;  // scroll the selection into view next frame

  void draw(Session& s);
  // The stages of `pipeline` the browser shows now (filter and toggle applied), in order.
  std::vector<StageRef> visible_stages(const Session& s, int pipeline) const;
  // Moves the selection by `delta` visible stages (what Up/Down do).
  void step(Session& s, int delta);

 private:
  bool shows(const Stage& stage, int index) const;
};

// The Stages tab: every pipeline's stage list side by side (pass, time, changed/same).
void draw_stage_overview(Session& s);

}  // namespace tv::gui
