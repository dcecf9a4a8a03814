#include "gui/app.h"

#include <imgui.h>

#include "gui/theme.h"

namespace tv::gui {

void App::frame() {
  session.targets.clear();
  session.poll();
  if (session.capture.get() != last_capture_) {
    last_capture_ = session.capture.get();
    order.initialise(session);
    rules.on_new_capture(session);
  }
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(viewport->WorkPos);
  ImGui::SetNextWindowSize(viewport->WorkSize);
  const auto flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
                     ImGuiWindowFlags_NoBringToFrontOnFocus;
  // Window::end_frame clears to the theme's background, the main window's own colour: painting it
  // again (a blended 1600x1000 rectangle) was most of an idle frame under a software renderer. A
  // transparent background is skipped; the window's border is still drawn.
  ImGui::PushStyleColor(ImGuiCol_WindowBg, IM_COL32(0, 0, 0, 0));
  ImGui::Begin("Thunder Viz", nullptr, flags);
  ImGui::PopStyleColor();
  draw_status_line();
  ImGui::Separator();
  ImGui::BeginChild("left", ImVec2(420, 0), true);
  browser.draw(session);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("right", ImVec2(0, 0), false);
  draw_tabs();
  ImGui::EndChild();
  ImGui::End();
  tour.draw(*this);
  ++frames;
}

void App::draw_status_line() {
  const Theme& t = theme();
  ImGui::Text("Thunder Viz");
  ImGui::SameLine();
  ImGui::TextColored(t.muted, "| %s", session.source.empty() ? "(nothing open)" : session.source.c_str());
  if (session.capture) {
    ImGui::SameLine();
    const auto& model = session.capture->model.name;
    if (session.source == "model " + model)  // a live run: the source names the model already
      ImGui::TextColored(t.muted, "| %zu pipeline(s)", session.capture->pipelines.size());
    else
      ImGui::TextColored(t.muted, "| model %s, %zu pipeline(s)", model.c_str(), session.capture->pipelines.size());
  }
  ImGui::SameLine(ImGui::GetWindowWidth() - 90);
  if (ImGui::SmallButton(tour.open ? "close tour" : "tour")) tour.open = !tour.open;
  if (session.worker.busy()) {
    std::string status = session.worker.status();
    ImGui::ProgressBar(static_cast<float>(session.worker.progress()), ImVec2(300, 0), status.c_str());
    ImGui::SameLine();
    ImGui::TextColored(t.muted, "working (the window stays live)");
  }
  if (!session.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, t.error);
    ImGui::TextWrapped("error: %s", session.error.c_str());
    ImGui::PopStyleColor();
    if (ImGui::SmallButton("dismiss")) session.error.clear();
  }
  if (!font_warning.empty()) ImGui::TextColored(t.muted, "%s", font_warning.c_str());
}

void App::draw_tabs() {
  if (!ImGui::BeginTabBar("panels")) return;
  static const char* kTitles[] = {"Stages", "Trace", "Diff", "Order", "Replay", "Rules"};
  // A request made before this frame is taken now; one made while a panel draws (a click that
  // opens another panel) stays for the next frame.
  const bool requested = session.panel_requested;
  session.panel_requested = false;
  for (Panel p : kPanels) {
    int i = static_cast<int>(p);
    ImGuiTabItemFlags flags = requested && session.panel == p ? ImGuiTabItemFlags_SetSelected : 0;
    if (!ImGui::BeginTabItem(kTitles[i], nullptr, flags)) continue;
    if (!requested && !session.panel_requested) session.panel = p;
    switch (p) {
      case Panel::stages: draw_stage_overview(session); break;
      case Panel::trace: trace.draw(session); break;
      case Panel::diff: diff.draw(session); break;
      case Panel::order: order.draw(session); break;
      case Panel::replay: replay.draw(session); break;
      case Panel::rules: rules.draw(session); break;
    }
    ImGui::EndTabItem();
  }
  ImGui::EndTabBar();
}

}  // namespace tv::gui
