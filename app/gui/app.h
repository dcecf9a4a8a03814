// The application: the session and one struct per panel, drawn into one fixed layout — a status
// line at the top, the stage browser at the left, the panels as tabs at the right. ImGui 1.86
// has no docking, so the layout is computed from the window size every frame.
#pragma once
#include <string>

#include "gui/diff_panel.h"
#include "gui/order_panel.h"
#include "gui/replay_panel.h"
#include "gui/rules_panel.h"
#include "gui/session.h"
#include "gui/stage_browser.h"
#include "gui/tour.h"
#include "gui/trace_view.h"

namespace tv::gui {

class App {
 public:
  Session session;
  StageBrowser browser;
  TraceView trace;
  DiffPanel diff;
  OrderPanel order;
  ReplayPanel replay;
  RulesPanel rules;
  Tour tour;
  std::string font_warning;
  bool quit = false;
  long frames = 0;
  long drawn_frames = 0;  // of those, the frames the window drew (the others equalled the last drawn)

  // Draws one frame of the UI (between Window::begin_frame and end_frame).
  void frame();

 private:
  void draw_status_line();
  void draw_tabs();
  const void* last_capture_ = nullptr;
};

}  // namespace tv::gui
