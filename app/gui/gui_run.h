// Running the window: options shared by `gui` and `screenshot`, and the two frame loops.
#pragma once
#include <string>
#include <vector>

#include "common/model_options.h"
#include "common/semantics_options.h"
#include "session/run.h"

namespace tv::gui {

struct GuiOptions {
  std::string file;                 // a capture (*.tvz.json) or a folder of Thunder printouts
  bool model_given = false;         // --model was on the command line
  tv::app::ModelOptions model;
  std::vector<std::string> orders;  // "jit,ddp" per pipeline
  int world_size = 1;
  std::string device = "cpu";
  tv::app::SemanticsOptions semantics;
  std::string script, dump_state;
  long frames = 0;                  // gui: stop after this many frames (0: until closed)
  std::string size = "1600x1000";
  std::string panel = "trace", out;  // screenshot
  int settle_frames = 8;            // screenshot: frames drawn after loading, before the capture
};

// Validates flags (throws tv::app::BadInput) and builds the live run request.
RunRequest make_request(const GuiOptions&);
void parse_size(const std::string& text, int* width, int* height);  // "1600x1000"

int run_gui(const GuiOptions&);
int run_screenshot(const GuiOptions&);

}  // namespace tv::gui
