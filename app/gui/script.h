// The scripted driver: a JSON list of actions injected between real frames, through the same
// calls the widgets make (and real key events through the GLFW backend's key callback, since
// ImGui 1.86 has no AddKeyEvent), one action per frame. Used by tests/gui.
// Actions: {"select_panel":"order"} {"select_stage":{"pipeline":0,"kind":"forward","stage":2}} (-1: the last)
// {"move_transform":{"from":1,"to":0}} {"add_transform":"ddp"} {"remove_transform":0}
// {"set_order":["jit","ddp"]} {"world":2} {"device":"cpu"} {"semantics":"thunder-2024-03"} {"workaround":"process-group"} {"run":true}
// {"wait_idle":true} {"key":"Down"} (also "Up", "Enter", "Escape", "Ctrl+F", "Shift+Enter", a letter)
// {"text":"linear"} {"find":"linear"} {"depth":0} {"hide_unchanged":true} {"filter":"DCE"}
// {"open_rule":["ddp","jit"]} (or {"order":["jit","ddp"],"semantics":"thunder-2024-03"}: what a click on that cell does)
// {"diff":{"across":true,"left":{..},"right":{..},"unified":false,"follow":true,"fold":true}} {"next_change":1}
// {"diff":{"every_pipeline":true,"base":0,"kind":"backward","pass":""}} (every pipeline side by side; "" = final stages)
// {"tour":true} {"load":"FILE"} {"frames":N} {"dump":"OUT.json"} {"screenshot":"OUT.png"} (the next
// frame, tooltips included) {"quit":true}
// {"follow_gradient":"t3"} (what a click on the forward statement defining t3 does)
// {"gradient_side":"backward"} (or "forward": what the gradient bar's buttons do)
// {"follow_source":{"file":"engine/jit/zoo.cpp","line":120}} (what a click on that source line does)
// {"source_stage":1} (or -1: the source pane's next/previous stage buttons) {"stop_source":true}
// Real input (tests that drive the window with X events, e.g. xdotool): {"real_input":true} hands the
// pointer back to the platform; {"targets":"OUT.json"} writes the named targets of the last frame,
// {"name": [x0, y0, x1, y1]} in window pixels; {"wait_for_file":"PATH"} holds the script, frames
// still drawn, until PATH exists (an error after 60 s).
// Mouse: a synthetic mouse replaces the platform's for the whole scripted run (no mouse over the
// window until a mouse action), fed to ImGui as real input, so hit-testing, hover, click and drag
// and drop run as for a user. Positions are named UI targets (gui/ui_targets.h) drawn in the last
// frame (a name ending in `*`: the first by name under that prefix), or [x, y] in window pixels;
// each step below takes one frame:
// {"mouse_move":"trace/proxy/t0"} (stays there), {"click":"rules/cell/jit,ddp"} (move, press,
// release), {"drag":{"from":"order/item/1","to":"order/item/0"}} (press on `from`, move past the
// drag threshold, hover `to` with the button held, release there).
#pragma once
#include <chrono>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gui/ui_targets.h"
#include "gui/window.h"

namespace tv::gui {

class App;

class ScriptDriver {
 public:
  // Throws tv::app::BadInput when the file is missing or is not a JSON list of objects.
  void load(const std::string& path);
  bool active() const { return !actions_.empty(); }
  bool finished() const {
    return next_ >= actions_.size() && wait_frames_ == 0 && !waiting_idle_ && mouse_steps_.empty() &&
           waiting_file_.empty();
  }
  // Called before each frame.
  void before_frame(App& app, Window& window);
  const std::vector<std::string>& log() const { return log_; }

 private:
  void apply(const nlohmann::json& action, App& app, Window& window);
  void press(Window& window, const std::string& key);
  // The point a mouse action names: a target's centre, or [x, y].
  TargetRect where(const App& app, const nlohmann::json& spec) const;
  std::vector<nlohmann::json> actions_;
  bool started_ = false;
  std::string screenshot_;                  // PNG to write from the frame being drawn
  SyntheticMouse mouse_;                    // what the window gets, kept between steps
  std::deque<SyntheticMouse> mouse_steps_;  // one per frame, before the next action
  size_t next_ = 0;
  long wait_frames_ = 0;
  bool waiting_idle_ = false;
  std::string waiting_file_;                              // wait_for_file: until it exists
  std::chrono::steady_clock::time_point waiting_until_;   // or until then
  std::vector<std::pair<int, int>> pressed_;  // keys (and mods) to release next frame
  std::vector<std::string> log_;              // what was applied, and what failed
};

}  // namespace tv::gui
