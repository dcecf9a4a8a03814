#include "gui/script.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_internal.h>
#include <imgui_impl_glfw.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <tuple>
#include <sstream>

#include "common/errors.h"
#include "gui/app.h"
#include "gui/state_dump.h"
#include "gui/window.h"

namespace tv::gui {
namespace {

using nlohmann::json;

int key_code(const std::string& name) {
  static const std::pair<const char*, int> kKeys[] = {
      {"Down", GLFW_KEY_DOWN},         {"Up", GLFW_KEY_UP},         {"Left", GLFW_KEY_LEFT},
      {"Right", GLFW_KEY_RIGHT},       {"Enter", GLFW_KEY_ENTER},   {"Escape", GLFW_KEY_ESCAPE},
      {"Tab", GLFW_KEY_TAB},           {"PageUp", GLFW_KEY_PAGE_UP}, {"PageDown", GLFW_KEY_PAGE_DOWN},
      {"Home", GLFW_KEY_HOME},         {"End", GLFW_KEY_END},       {"Backspace", GLFW_KEY_BACKSPACE},
      {"Delete", GLFW_KEY_DELETE},     {"Space", GLFW_KEY_SPACE}};
  for (const auto& [n, code] : kKeys)
    if (name == n) return code;
  if (name.size() == 1 && std::isalnum(static_cast<unsigned char>(name[0])))
    return std::toupper(static_cast<unsigned char>(name[0]));  // GLFW_KEY_A == 'A', GLFW_KEY_0 == '0'
  return -1;
}

// A stage from {"pipeline":0,"kind":"forward","stage":2}; a negative stage counts from the end.
StageRef stage_ref(const Session& s, const json& j) {
  StageRef r;
  r.pipeline = j.value("pipeline", 0);
  r.stage = j.value("stage", 0);
  TraceKind k = TraceKind::forward;
  if (j.contains("kind") && !parse_trace_kind(j["kind"].get<std::string>(), &k))
    throw std::invalid_argument("unknown trace kind " + j["kind"].get<std::string>());
  r.kind = k;
  if (const auto* p = s.pipeline(r.pipeline); p && r.stage < 0) r.stage += static_cast<int>(p->stages.of(k).size());
  return r;
}

}  // namespace

void ScriptDriver::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw tv::app::BadInput(path + ": cannot read the script");
  json doc;
  try {
    in >> doc;
  } catch (const std::exception& e) {
    throw tv::app::BadInput(path + ": not JSON: " + e.what());
  }
  if (!doc.is_array()) throw tv::app::BadInput(path + ": expected a JSON list of actions, e.g. [{\"frames\": 5}]");
  for (auto& a : doc) {
    if (!a.is_object() || a.size() != 1)
      throw tv::app::BadInput(path + ": each action is an object with one member, got " + a.dump());
    actions_.push_back(a);
  }
}

void ScriptDriver::press(Window& window, const std::string& spec) {
  int mods = 0;
  std::string key = spec;
  std::vector<int> modifier_keys;
  for (auto [prefix, mod, code] : {std::tuple{"Ctrl+", GLFW_MOD_CONTROL, GLFW_KEY_LEFT_CONTROL},
                                   std::tuple{"Shift+", GLFW_MOD_SHIFT, GLFW_KEY_LEFT_SHIFT}}) {
    if (key.rfind(prefix, 0) == 0) {
      key = key.substr(std::string(prefix).size());
      mods |= mod;
      modifier_keys.push_back(code);
    }
  }
  int code = key_code(key);
  if (code < 0) throw std::invalid_argument("unknown key " + spec);
  for (int m : modifier_keys) {
    ImGui_ImplGlfw_KeyCallback(window.handle(), m, 0, GLFW_PRESS, mods);
    pressed_.push_back({m, mods});
  }
  ImGui_ImplGlfw_KeyCallback(window.handle(), code, 0, GLFW_PRESS, mods);
  pressed_.insert(pressed_.begin(), {code, mods});
}

TargetRect ScriptDriver::where(const App& app, const json& spec) const {
  if (spec.is_array() && spec.size() == 2 && spec[0].is_number() && spec[1].is_number()) {
    float x = spec[0].get<float>(), y = spec[1].get<float>();
    return {x, y, x, y};
  }
  if (!spec.is_string()) throw std::invalid_argument("expected a target name or [x, y], got " + spec.dump());
  const std::string name = spec.get<std::string>();
  if (auto rect = app.session.targets.find(name)) return *rect;
  if (!name.empty() && name.back() == '*')  // "trace/call/*": the first target (by name) under the prefix
    for (const auto& n : app.session.targets.names())
      if (n.rfind(name.substr(0, name.size() - 1), 0) == 0) return *app.session.targets.find(n);
  // Say what is on screen under the same first path component, to make a wrong name easy to fix.
  std::string prefix = name.substr(0, name.find('/') + 1), known;
  for (const auto& n : app.session.targets.names())
    if (n.rfind(prefix, 0) == 0 && known.size() < 400) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("no target '" + name + "' in the last frame" +
                              (known.empty() ? " (none under '" + prefix + "')" : " (on screen: " + known + ")"));
}

void ScriptDriver::before_frame(App& app, Window& window) {
  if (!started_) {
    started_ = true;
    app.session.targets.enabled = true;
    mouse_.active = true;  // from now on the platform's pointer is ignored: runs are reproducible
    window.set_synthetic_mouse(mouse_);
  }
  if (!screenshot_.empty()) {
    bool written = window.write_png(screenshot_);
    log_.push_back((written ? "ok screenshot " : "error screenshot: cannot write ") + screenshot_);
    if (!written) app.session.error = "script: cannot write " + screenshot_;
    window.capture_pixels(false);
    screenshot_.clear();
  }
  for (auto [code, mods] : pressed_) ImGui_ImplGlfw_KeyCallback(window.handle(), code, 0, GLFW_RELEASE, mods);
  pressed_.clear();
  if (!mouse_steps_.empty()) {
    mouse_ = mouse_steps_.front();
    mouse_steps_.pop_front();
    window.set_synthetic_mouse(mouse_);
    return;
  }
  if (wait_frames_ > 0) {
    --wait_frames_;
    return;
  }
  if (!waiting_file_.empty()) {
    if (std::filesystem::exists(waiting_file_)) {
      log_.push_back("ok found " + waiting_file_);
    } else if (std::chrono::steady_clock::now() < waiting_until_) {
      return;
    } else {
      log_.push_back("error wait_for_file: " + waiting_file_ + " did not appear within 60 s");
      app.session.error = "script: " + waiting_file_ + " did not appear within 60 s";
    }
    waiting_file_.clear();
    return;
  }
  if (waiting_idle_) {
    if (app.session.worker.busy()) return;
    waiting_idle_ = false;
    wait_frames_ = 2;  // let the result be taken and drawn
    return;
  }
  if (next_ >= actions_.size()) return;
  const json& action = actions_[next_++];
  try {
    apply(action, app, window);
    log_.push_back("ok " + action.dump());
  } catch (const std::exception& e) {
    log_.push_back("error " + action.dump() + ": " + e.what());
    app.session.error = std::string("script: ") + e.what();
  }
}

void ScriptDriver::apply(const json& action, App& app, Window& window) {
  const std::string name = action.begin().key();
  const json& v = action.begin().value();
  Session& s = app.session;
  if (name == "select_panel") {
    Panel p;
    if (!parse_panel(v.get<std::string>(), &p)) throw std::invalid_argument("unknown panel " + v.dump());
    s.select_panel(p);
  } else if (name == "select_stage") {
    StageRef r = stage_ref(s, v);
    if (!s.stage(r)) throw std::invalid_argument("no such stage " + v.dump());
    s.select_stage(r);
  } else if (name == "move_transform") {
    app.order.move(v.at("from").get<int>(), v.at("to").get<int>());
  } else if (name == "add_transform") {
    app.order.add(v.get<std::string>());
  } else if (name == "remove_transform") {
    app.order.remove(v.get<int>());
  } else if (name == "set_order") {
    app.order.set_order(v.get<std::vector<std::string>>());
  } else if (name == "world") {
    app.order.world_size = v.get<int>();
  } else if (name == "device") {
    app.order.device = v.get<std::string>();
  } else if (name == "semantics") {
    app.order.semantics = v.get<std::string>();
  } else if (name == "workaround") {
    app.order.workaround = v.get<std::string>();
  } else if (name == "run") {
    if (v.get<bool>()) app.order.run(s);
  } else if (name == "wait_idle") {
    waiting_idle_ = true;
  } else if (name == "mouse_move" || name == "click") {
    TargetRect r = where(app, v);
    SyntheticMouse at{true, r.centre_x(), r.centre_y(), false};
    mouse_steps_.push_back(at);
    if (name == "click") {
      SyntheticMouse pressed = at;
      pressed.down = true;
      mouse_steps_.push_back(pressed);
      mouse_steps_.push_back(at);
    }
  } else if (name == "drag") {
    TargetRect from = where(app, v.at("from")), to = where(app, v.at("to"));
    auto step = [&](float x, float y, bool down) { mouse_steps_.push_back({true, x, y, down}); };
    step(from.centre_x(), from.centre_y(), false);
    step(from.centre_x(), from.centre_y(), true);
    // Halfway, then onto the target: well past ImGui's drag threshold (6 pixels) unless both are one spot.
    step((from.centre_x() + to.centre_x()) / 2, (from.centre_y() + to.centre_y()) / 2, true);
    for (int i = 0; i < 3; ++i) step(to.centre_x(), to.centre_y(), true);  // accepted, then accepted before
    step(to.centre_x(), to.centre_y(), false);                             // delivered on release
    step(to.centre_x(), to.centre_y(), false);
  } else if (name == "key") {
    press(window, v.get<std::string>());
  } else if (name == "text") {
    for (unsigned char c : v.get<std::string>()) ImGui_ImplGlfw_CharCallback(window.handle(), c);
  } else if (name == "find") {
    ImGui::ClearActiveID();  // an active search field would write its own buffer back over the query
    app.trace.search_open = true;
    app.trace.query = v.get<std::string>();
    app.trace.match = -1;
    app.trace.find(+1);
  } else if (name == "depth") {
    app.trace.depth = v.get<int>();
  } else if (name == "hide_unchanged") {
    app.browser.hide_unchanged = v.get<bool>();
  } else if (name == "filter") {
    std::string f = v.get<std::string>();
    std::snprintf(app.browser.filter.InputBuf, sizeof app.browser.filter.InputBuf, "%s", f.c_str());
    app.browser.filter.Build();
  } else if (name == "open_rule") {
    const json& order = v.is_object() ? v.at("order") : v;
    app.rules.open_order(s, order.get<std::vector<std::string>>(), v.is_object() ? v.value("semantics", std::string("lazy")) : std::string("lazy"));
  } else if (name == "diff") {
    s.diff.across_pipelines = v.value("across", s.diff.across_pipelines);
    s.diff.unified = v.value("unified", s.diff.unified);
    s.diff.follow_selection = v.value("follow", s.diff.follow_selection);
    s.diff.fold_unchanged = v.value("fold", s.diff.fold_unchanged);
    s.diff.all_pipelines = v.value("every_pipeline", s.diff.all_pipelines);
    s.diff.base = v.value("base", s.diff.base);
    s.diff.pass = v.value("pass", s.diff.pass);
    if (v.contains("kind") && !parse_trace_kind(v["kind"].get<std::string>(), &s.diff.kind))
      throw std::invalid_argument("unknown trace kind " + v["kind"].dump());
    if (v.contains("left")) s.diff.left = stage_ref(s, v["left"]);
    if (v.contains("right")) s.diff.right = stage_ref(s, v["right"]);
    s.select_panel(Panel::diff);
  } else if (name == "next_change") {
    app.diff.next_change(v.get<int>() < 0 ? -1 : +1);
  } else if (name == "follow_gradient") {
    s.follow_gradient(s.selected.pipeline, v.get<std::string>());
  } else if (name == "gradient_side") {
    TraceKind kind;
    if (!parse_trace_kind(v.get<std::string>(), &kind)) throw std::invalid_argument("unknown trace kind " + v.dump());
    s.show_gradient_side(kind);
  } else if (name == "follow_source") {
    s.follow_source(SourceLine{v.at("file").get<std::string>(), v.at("line").get<int>(), v.value("code", std::string())});
  } else if (name == "source_stage") {
    s.step_source_stage(v.get<int>() < 0 ? -1 : +1);
  } else if (name == "stop_source") {
    s.stop_following_source();
  } else if (name == "real_input") {
    mouse_ = SyntheticMouse{};
    mouse_.active = !v.get<bool>();
    window.set_synthetic_mouse(mouse_);
  } else if (name == "targets") {
    json out = json::object();
    for (const auto& n : s.targets.names()) {
      TargetRect r = *s.targets.find(n);
      out[n] = {r.x0, r.y0, r.x1, r.y1};
    }
    const std::string path = v.get<std::string>(), part = path + ".part";  // whole when it appears
    {
      std::ofstream f(part);
      if (!(f << out.dump(1) << "\n")) throw std::runtime_error("cannot write " + part);
    }
    std::filesystem::rename(part, path);
  } else if (name == "wait_for_file") {
    waiting_file_ = v.get<std::string>();
    waiting_until_ = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  } else if (name == "tour") {
    app.tour.open = v.get<bool>();
  } else if (name == "load") {
    s.load_file(v.get<std::string>());
  } else if (name == "frames") {
    wait_frames_ = v.get<long>();
  } else if (name == "dump") {
    write_state(app, v.get<std::string>(), log_);
  } else if (name == "screenshot") {
    screenshot_ = v.get<std::string>();
    window.capture_pixels(true);
  } else if (name == "quit") {
    app.quit = v.get<bool>();
  } else {
    throw std::invalid_argument("unknown action " + name);
  }
}

}  // namespace tv::gui
