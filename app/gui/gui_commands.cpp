#include "gui/gui_commands.h"

#include <memory>

#include "gui/gui_run.h"
#include "gui/session.h"

namespace tv::gui {
namespace {

void add_source_options(CLI::App& cmd, GuiOptions& o) {
  cmd.add_option("file", o.file, "a capture (*.tvz.json) or a folder of Thunder printouts (<case>__<kind>__<i>.txt)");
  o.model.add_to(cmd);
  cmd.add_option("--order", o.orders, "a transform order to run, e.g. jit,ddp (repeatable: one pipeline each)");
  cmd.add_option("--world", o.world_size, "world size (ranks) of the live run")->check(CLI::Range(1, 64));
  cmd.add_option("--device", o.device, "device of the live run")->check(CLI::IsMember({"cpu", "cuda"}));
  o.semantics.add_to(cmd);
  cmd.add_option("--size", o.size, "window size WxH")->capture_default_str();
}

}  // namespace

void add_gui_commands(CLI::App& app, tv::app::Runner& run) {
  auto o = std::make_shared<GuiOptions>();
  auto* gui = app.add_subcommand("gui", "Open the desktop GUI on a capture, or run a built-in model live");
  add_source_options(*gui, *o);
  gui->add_option("--script", o->script, "JSON list of actions to inject between frames (tests)");
  gui->add_option("--dump-state", o->dump_state, "write the window's state as JSON on exit (tests)");
  gui->add_option("--frames", o->frames, "close after this many frames (0: when the window is closed)");
  gui->callback([&run, o, gui] {
    o->model_given = gui->get_option("--model")->count() > 0;
    run = [o] { return run_gui(*o); };
  });

  auto s = std::make_shared<GuiOptions>();
  auto* shot = app.add_subcommand("screenshot", "Render one GUI panel into a PNG (hidden window; needs an X display)");
  add_source_options(*shot, *s);
  std::vector<std::string> panels;
  for (Panel p : kPanels) panels.push_back(panel_name(p));
  shot->add_option("--panel", s->panel, "the panel to render")->required()->check(CLI::IsMember(panels));
  shot->add_option("--out", s->out, "the PNG to write")->required();
  shot->add_option("--frames", s->settle_frames, "frames to draw after loading before the capture")->capture_default_str();
  shot->callback([&run, s, shot] {
    s->model_given = shot->get_option("--model")->count() > 0;
    run = [s] { return run_screenshot(*s); };
  });
}

}  // namespace tv::gui
