#include "gui/gui_run.h"

#include <GLFW/glfw3.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <sstream>

#include "common/checked.h"
#include "gui/app.h"
#include "gui/script.h"
#include "gui/state_dump.h"
#include "gui/window.h"
#include "jit/zoo.h"

namespace tv::gui {
namespace {

using tv::app::BadInput;

void check_model(const std::string& name, const std::map<std::string, std::string>& params) {
  std::string names;
  for (const auto& info : jit::list_models()) {
    names += (names.empty() ? "" : ", ") + info.name;
    if (info.name != name) continue;
    for (const auto& [key, value] : params) {
      bool known = key == "seed" || key == "device" ||
                   std::any_of(info.params.begin(), info.params.end(), [&](const auto& p) { return p.name == key; });
      if (!known) throw BadInput("--param " + key + ": model " + name + " has no such parameter (see `thunder-viz models`)");
    }
    return;
  }
  throw BadInput("--model " + name + ": unknown model; built-in models: " + names);
}

// Opens the capture or starts the live run the options ask for.
void start(App& app, const GuiOptions& o) {
  if (!o.file.empty()) app.session.load_file(o.file);
  else app.session.run(make_request(o), "running model " + o.model.model);
}

bool open_window(Window& window, const GuiOptions& o, bool visible) {
  WindowOptions w;
  parse_size(o.size, &w.width, &w.height);
  w.visible = visible;
  std::string error;
  if (window.open(w, &error)) return true;
  std::cerr << "error: " << error << "\n";
  return false;
}

}  // namespace

void parse_size(const std::string& text, int* width, int* height) {
  char x = 0;
  std::stringstream ss(text);
  if (!(ss >> *width >> x >> *height) || x != 'x' || *width < 200 || *height < 150 || *width > 16384 || *height > 16384)
    throw BadInput("--size " + text + ": expected WxH from 200x150 to 16384x16384, e.g. 1600x1000");
}

RunRequest make_request(const GuiOptions& o) {
  if (!o.file.empty() && o.model_given) throw BadInput("give a capture file or --model, not both");
  RunRequest r;
  r.model = o.model.model;
  r.params = o.model.param_map();
  check_model(r.model, r.params);
  o.semantics.check();
  for (const auto& text : o.orders) {
    PipelineSpec spec;
    spec.order = tv::app::split_order(text);
    spec.world_size = o.world_size;
    spec.device = o.device;
    o.semantics.apply(spec);
    r.pipelines.push_back(spec);
  }
  return r;
}

int run_gui(const GuiOptions& o) {
  if (o.file.empty()) make_request(o);  // bad flags: exit 2 before any window
  int w, h;
  parse_size(o.size, &w, &h);
  ScriptDriver script;
  if (!o.script.empty()) script.load(o.script);
  Window window;
  if (!open_window(window, o, true)) return tv::app::kBadInput;
  App app;
  app.font_warning = window.font_warning();
  start(app, o);
  const bool scripted = script.active();
  while (!window.should_close() && !app.quit) {
    if (scripted) script.before_frame(app, window);
    // Interactive: sleep until an event (or a short timeout, to show progress); scripted: full speed.
    window.begin_frame(scripted || o.frames > 0 ? 0.0 : (app.session.worker.busy() ? 0.05 : 0.25));
    app.frame();
    window.end_frame();
    app.drawn_frames = window.drawn_frames();
    if (o.frames > 0 && app.frames >= o.frames) break;
  }
  app.session.worker.join();
  app.session.poll();
  if (!o.dump_state.empty()) write_state(app, o.dump_state, script.log());
  return tv::app::kOk;
}

int run_screenshot(const GuiOptions& o) {
  if (o.out.empty()) throw BadInput("--out FILE.png is required");
  Panel panel;
  if (!parse_panel(o.panel, &panel)) throw BadInput("--panel " + o.panel + ": unknown panel");
  if (o.file.empty()) make_request(o);
  tv::app::check_output_file(o.out);  // the PNG is written as the captures are: a file it cannot replace is refused first
  Window window;
  if (!open_window(window, o, false)) return tv::app::kBadInput;
  App app;
  app.font_warning = window.font_warning();
  start(app, o);
  app.session.select_panel(panel);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  int settled = 0;
  const Capture* shown = nullptr;
  while (settled < std::max(2, o.settle_frames)) {
    bool busy = app.session.worker.busy();
    if (!busy || std::chrono::steady_clock::now() > deadline) ++settled;
    if (settled == std::max(2, o.settle_frames) - 1) window.capture_pixels(true);
    window.begin_frame(0.0);
    app.frame();
    window.end_frame();
    // A new capture may bring its own panel to the front (a rules-only one does): the asked one wins.
    if (app.session.capture.get() != shown) {
      shown = app.session.capture.get();
      app.session.select_panel(panel);
    }
  }
  int width = 0, height = 0;
  window.read_pixels(&width, &height);
  const std::string png = window.png();
  if (png.empty())
    throw BadInput(o.out + ": cannot write the PNG: the window gave no pixels to encode; check the X display (DISPLAY) "
                           "and try a smaller --size");
  tv::app::write_output_file(o.out, png);
  std::cout << "wrote " << o.out << " (" << width << "x" << height << ", panel " << o.panel << ")\n";
  if (!app.session.error.empty()) {
    std::cerr << "error: " << app.session.error << "\n";
    return tv::app::kBadInput;
  }
  return tv::app::kOk;
}

}  // namespace tv::gui
