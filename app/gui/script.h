// The scripted driver: a JSON list of actions injected between real frames, through the same
// calls the widgets make (and real key events through the GLFW backend's key callback, since
// ImGui 1.86 has no AddKeyEvent), one action per frame. Used by tests/gui.
// Actions: {"select_panel":"order"} {"select_stage":{"pipeline":0,"kind":"forward","stage":2}}
// {"move_transform":{"from":1,"to":0}} {"add_transform":"ddp"} {"remove_transform":0}
// {"set_order":["jit","ddp"]} {"world":2} {"device":"cpu"} {"capture_at_jit":true} {"run":true}
// {"wait_idle":true} {"key":"Down"} (also "Up", "Enter", "Escape", "Ctrl+F", "Shift+Enter", a letter)
// {"text":"linear"} {"find":"linear"} {"depth":0} {"hide_unchanged":true} {"filter":"DCE"}
// {"open_rule":["ddp","jit"]} {"diff":{"across":true,"left":{..},"right":{..},"unified":false}}
// {"tour":true} {"load":"FILE"} {"frames":N} {"dump":"OUT.json"} {"quit":true}
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tv::gui {

class App;
class Window;

class ScriptDriver {
 public:
  // Throws tv::cli::BadInput when the file is missing or is not a JSON list of objects.
  void load(const std::string& path);
  bool active() const { return !actions_.empty(); }
  bool finished() const { return next_ >= actions_.size() && wait_frames_ == 0 && !waiting_idle_; }
  // Called before each frame.
  void before_frame(App& app, Window& window);
  const std::vector<std::string>& log() const { return log_; }

 private:
  void apply(const nlohmann::json& action, App& app, Window& window);
  void press(Window& window, const std::string& key);
  std::vector<nlohmann::json> actions_;
  size_t next_ = 0;
  long wait_frames_ = 0;
  bool waiting_idle_ = false;
  std::vector<std::pair<int, int>> pressed_;  // keys (and mods) to release next frame
  std::vector<std::string> log_;              // what was applied, and what failed
};

}  // namespace tv::gui
